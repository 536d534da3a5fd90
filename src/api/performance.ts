// The older web client's up/down arrows: the 24-hour change (computed by the data module from
// the rollups) as a rating and a signed percentage with two decimals.

export interface Performance {
  rating: 'up' | 'down' | 'neutral';
  changePercent: string;
}

export function performanceOf(change24h: number | null): Performance {
  const rounded = change24h === null || !Number.isFinite(change24h) ? 0 : round2(change24h);
  if (rounded === 0) return { rating: 'neutral', changePercent: '0.00%' };
  return rounded > 0
    ? { rating: 'up', changePercent: `+${rounded.toFixed(2)}%` }
    : { rating: 'down', changePercent: `${rounded.toFixed(2)}%` };
}

function round2(value: number): number {
  const rounded = Math.round(Math.abs(value) * 100) / 100;
  return Math.sign(value) * rounded;
}
