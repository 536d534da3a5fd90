// Number formatting for prices that range from fractions of a cent to tens of thousands.

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

export function money(value) {
  return usd.format(value);
}

export function price(value) {
  if (!Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 1 || value === 0) return usd.format(value);
  const digits = Math.min(10, Math.max(2, 2 - Math.floor(Math.log10(Math.abs(value))) + 2));
  return `$${value.toFixed(digits)}`;
}

export function shares(value) {
  return new Intl.NumberFormat('en-US', { maximumFractionDigits: 8 }).format(value);
}

/** A percentage as shown: two decimals; a change that rounds to zero is shown as 0. */
function shownPercent(value) {
  return Number(value.toFixed(2)) || 0; // no "-0.00"
}

export function percent(value) {
  if (!Number.isFinite(value)) return '';
  const rounded = shownPercent(value);
  const sign = rounded > 0 ? '+' : '';
  return `${sign}${rounded.toFixed(2)} %`;
}

/**
 * 'up', 'down' or '' for a change in percent, judged on the figure percent() shows, so that a
 * −0.001 % change shown as "0.00 %" is not coloured as a fall.
 */
export function trend(value) {
  if (!Number.isFinite(value)) return '';
  const rounded = shownPercent(value);
  return rounded > 0 ? 'up' : rounded < 0 ? 'down' : '';
}

const short = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 2 });

/** 1234567 → "1.23M". */
export function compact(value) {
  return Number.isFinite(value) ? short.format(value) : '—';
}
