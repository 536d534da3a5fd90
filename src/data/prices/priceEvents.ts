import { z } from 'zod';

/**
 * Price events: every harvest cycle, in the transaction that writes its prices, sends
 *   NOTIFY price_ticks, '{"at":"2026-03-01T12:00:05.000Z","part":1,"parts":1,"prices":{"BTC":95012.5,…}}'
 * so listeners learn of new prices the moment they are committed, and never of prices that were
 * not. `at` is the instant the prices stand for (the harvest slot); prices carry ten significant
 * digits. PostgreSQL refuses payloads of 8000 bytes or more, so a cycle with more currencies than
 * fit (roughly 350) is sent as several messages numbered part 1..parts, each a valid event alone.
 */
export const PRICE_TICKS_CHANNEL = 'price_ticks';

/** Largest payload we send, in bytes: PostgreSQL's limit is 8000, less a margin. */
export const MAX_PRICE_TICK_BYTES = 7900;

export const priceTickSchema = z.object({
  at: z.iso.datetime(),
  part: z.number().int().min(1),
  parts: z.number().int().min(1),
  prices: z.record(z.string(), z.number().positive()),
});
export type PriceTick = z.infer<typeof priceTickSchema>;

/** Parses a `price_ticks` payload; throws on anything that is not a price event. */
export function parsePriceTick(payload: string): PriceTick {
  return priceTickSchema.parse(JSON.parse(payload));
}

/** The NOTIFY payloads of one cycle: as few as fit under the limit, usually one. */
export function priceTickPayloads(
  at: Date,
  prices: Iterable<readonly [string, number]>,
  maxBytes = MAX_PRICE_TICK_BYTES,
): string[] {
  const head = (part: number | string, parts: number | string) =>
    `{"at":"${at.toISOString()}","part":${part},"parts":${parts},"prices":{`;
  // Room for the widest header any part number could need.
  const room = maxBytes - Buffer.byteLength(head(99999, 99999)) - 2;
  const groups: string[][] = [[]];
  let used = 0;
  for (const [code, price] of prices) {
    const entry = `${JSON.stringify(code)}:${JSON.stringify(Number(price.toPrecision(10)))}`;
    const size = Buffer.byteLength(entry) + 1;
    if (size > room) throw new RangeError(`a price entry of ${size} bytes cannot be sent`);
    if (used + size > room) {
      groups.push([]);
      used = 0;
    }
    groups.at(-1)!.push(entry);
    used += size;
  }
  return groups.map((entries, i) => `${head(i + 1, groups.length)}${entries.join(',')}}}`);
}
