import type { Readable } from 'node:stream';
import { z } from 'zod';

// What the data module answers the API (src/api/dataClient.ts), as the API reads it: the schemas
// its JSON is checked against and the shapes the API's code works with.

const displayCurrency = z.object({
  currencyName: z.string(),
  currencyCode: z.string(),
  value: z.number(),
  logoUrl: z.string(),
  lastUpdated: z.string(),
  // The 24-hour statistics (null without a price in the last day).
  open24h: z.number().nullable().default(null),
  high24h: z.number().nullable().default(null),
  low24h: z.number().nullable().default(null),
  volume24h: z.number().nullable().default(null),
  change24h: z.number().nullable().default(null),
});
export type DisplayCurrency = z.infer<typeof displayCurrency>;

export const currencyList = z.object({ currencies: z.array(displayCurrency) });
export const timeValues = z.array(z.object({ timestamp: z.string(), value: z.number() }));
export const candles = z.array(
  z.object({
    timestamp: z.string(),
    open: z.number().nullable(),
    high: z.number().nullable(),
    low: z.number().nullable(),
    close: z.number().nullable(),
    volume: z.number(),
    count: z.number(),
  }),
);
export type Candle = z.infer<typeof candles>[number];

export interface CandleWindow {
  hours: number;
  intervalSeconds: number;
  /** IANA zone: buckets of a day or more start at its local midnight. */
  timeZone?: string;
}

export interface PricePoint {
  /** Bucket start, epoch milliseconds. */
  time: number;
  value: number;
}

export interface ForwardedAnswer {
  status: number;
  body: unknown;
  /** Retry-After and WWW-Authenticate, when the data module sent them. */
  headers: Record<string, string>;
}

/** A data-module answer passed on as it is (see `historyJson`). */
export interface PassedOnJson {
  body: Readable;
  /** Its Content-Length, when the data module sent one. */
  length?: number;
}
