import { z } from 'zod';
import { DEFAULT_MAX_FUTURE_SECONDS } from '../../data/ingest/candleValidation.ts';
import { isKnownTimeZone } from '../time/timeZones.ts';
import { cidrList, positiveInt } from './fields.ts';

// Configuration: the data module's routes (who may call them, how much one request may ask for
// or send, how many expensive answers run at once) and its history.

export const dataSection = z.object({
  DATA_TRUSTED_NETWORKS: cidrList
    .default([])
    .describe(
      "Comma-separated CIDRs whose callers reach /data/** (and the API's /api/news-sentiment/add) without a token.",
    ),
  DATA_NAIVE_TIME_ZONE: z
    .string()
    .refine(isKnownTimeZone, 'unknown time zone (use an IANA name such as Europe/Berlin)')
    .default('UTC')
    .describe(
      'IANA time zone in which the data module reads signal timestamps sent without a zone (clients that send naive local times).',
    ),
  HISTORY_MAX_POINTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(50000)
    .describe('Most points one history answer may hold; larger requests go to the export route.'),
  HISTORY_CACHE_MB: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_536)
    .default(256)
    .describe(
      'Megabytes of formatted history the data module keeps for answers read from settled rows (rollups and raw rows that change only with a recomputed backfill; least recently used go first; 0 turns it off).',
    ),
  ROLLUP_SETTLE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(120)
    .describe(
      'Rollup tables materialise only buckets that ended this long ago; newer writes may still be in flight; older ones are marked for recomputation by the writers (src/data/prices/invalidations.ts).',
    ),
  PRICE_MAX_FUTURE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(DEFAULT_MAX_FUTURE_SECONDS)
    .describe('Clock skew allowed for price times: later bulk prices are rejected (400).'),
  PRICE_BULK_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(100_000)
    .describe('Most candles or ticks one POST /data/prices/bulk request may hold.'),
  PRICE_BULK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(16 * 1024 * 1024)
    .describe('Largest body, in bytes, of one POST /data/prices/bulk request.'),
  SIGNAL_BULK_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(10_000)
    .describe(
      'Most items one bulk request of news sentiment, predictions or training sessions may hold.',
    ),
  SIGNAL_BULK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(10 * 1024 * 1024)
    .describe('Largest body, in bytes, of one bulk request of signal inputs.'),
  HISTORY_MAX_CONCURRENT: positiveInt
    .default(4)
    .describe(
      'History answers (/data/currency/history) computed at once; more wait in a short queue, then get 503 with Retry-After.',
    ),
  CANDLES_MAX_CONCURRENT: positiveInt
    .default(2)
    .describe('Candle answers (/data/candles/{code}) computed at once; the same queue and 503.'),
  EXPORT_MAX_CONCURRENT: positiveInt
    .default(2)
    .describe(
      'Candle exports (/data/candles/{code}/export) streaming at once; the same queue and 503.',
    ),
  ADMISSION_QUEUE_LENGTH: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(8)
    .describe(
      'Requests that may wait for each of those limits; a request finding the queue full gets 503 with Retry-After at once.',
    ),
  ADMISSION_QUEUE_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60_000)
    .default(2000)
    .describe('Longest wait in such a queue before a 503 with Retry-After (ms).'),
});
