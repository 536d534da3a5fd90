/**
 * A whole count with thousands separators (1,234,567), as `toLocaleString('en-US')` writes it,
 * without ICU: its first call loads locale data, about 10 ms of CPU in a short command.
 */
export function formatCount(value: number): string {
  const grouped = String(Math.round(Math.abs(value))).replace(/\B(?=(\d{3})+$)/g, ',');
  return value <= -0.5 ? `-${grouped}` : grouped;
}
