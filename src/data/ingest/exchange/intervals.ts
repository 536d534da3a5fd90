// Candle sizes by their Binance names (the names the CLI takes); each source maps the ones it has.

const INTERVAL_MS: Record<string, number> = {
  '1s': 1_000,
  '1m': 60_000,
  '3m': 180_000,
  '5m': 300_000,
  '15m': 900_000,
  '30m': 1_800_000,
  '1h': 3_600_000,
  '2h': 7_200_000,
  '4h': 14_400_000,
  '6h': 21_600_000,
  '8h': 28_800_000,
  '12h': 43_200_000,
  '1d': 86_400_000,
  '3d': 259_200_000,
  '1w': 604_800_000,
};
export const INTERVALS = Object.keys(INTERVAL_MS);

export function intervalMs(interval: string): number {
  const ms = INTERVAL_MS[interval];
  if (!ms) throw new Error(`unsupported interval '${interval}' (one of ${INTERVALS.join(', ')})`);
  return ms;
}
