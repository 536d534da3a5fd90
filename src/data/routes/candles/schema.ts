import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';
import { isKnownTimeZone } from '../../../shared/time/timeZones.ts';
import { integerParam, MAX_HOURS } from '../../../shared/http/queryParams.ts';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
const MAX_INTERVAL_SECONDS = 10 * 365 * 86_400;

/** "3600", "90s", "15m", "4h", "1d", "1w" → seconds. */
function durationSeconds(signed: boolean) {
  const pattern = signed ? /^-?\d{1,9}[smhdw]?$/ : /^\d{1,9}[smhdw]?$/;
  return z
    .string()
    .regex(
      pattern,
      `seconds or a duration such as 90s, 15m, 1h, 4h, 1d, 1w${signed ? ' (may be negative)' : ''}`,
    )
    .transform((value) => {
      const unit = /[smhdw]$/.test(value) ? value.slice(-1) : 's';
      return Number.parseInt(value, 10) * UNIT_SECONDS[unit]!;
    });
}

// Far enough for any market data, near enough that every bucket computation stays in range.
const EARLIEST = Date.UTC(1900, 0, 1);
const LATEST = Date.UTC(2200, 0, 1);

const instant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .refine(
    (date) => date.getTime() >= EARLIEST && date.getTime() < LATEST,
    'must be between 1900 and 2200',
  )
  .meta({
    description: 'ISO 8601 instant, e.g. 2026-03-29T00:00:00Z or 2026-03-29T00:00:00+01:00',
  });

export const FILL_MODES = ['none', 'null', 'previous', 'linear'] as const;

export const candleParams = z.object({ code: currencyCodeSchema });

const candleFields = {
  interval: durationSeconds(false)
    .pipe(z.number().int().min(1).max(MAX_INTERVAL_SECONDS))
    .default(60)
    .meta({
      description: 'Bucket width: seconds, or 1m, 15m, 1h, 4h, 1d, 1w (any n with s/m/h/d/w).',
    }),
  from: instant.optional().meta({ description: 'Start of the window (inclusive).' }),
  to: instant.optional().meta({ description: 'End of the window (exclusive); default now.' }),
  hours: integerParam.pipe(z.number().int().min(1).max(MAX_HOURS)).optional().meta({
    description: `Window of this many hours ending now (instead of from/to); default 24.`,
  }),
  fill: z
    .enum(FILL_MODES)
    .default('none')
    .meta({
      description:
        'Empty buckets: none (left out), null (null prices), previous (last close, seeded from before ' +
        'the window), linear (interpolated between the neighbouring closes).',
    }),
  tz: z
    .string()
    .refine(isKnownTimeZone, 'unknown time zone (use an IANA name such as Europe/Berlin)')
    .optional()
    .meta({
      description:
        'IANA time zone: buckets under a day are counted from its local midnight and keep their width across DST changes; days and weeks follow its wall clock (they start at local midnight).',
    }),
  origin: instant.optional().meta({
    description:
      'Align buckets to this instant (default: the epoch; with tz, local midnight of Monday 2000-01-03).',
  }),
  offset: durationSeconds(true)
    .pipe(z.number().int().min(-MAX_INTERVAL_SECONDS).max(MAX_INTERVAL_SECONDS))
    .optional()
    .meta({ description: 'Shift every bucket boundary by this duration (e.g. 6h, -30m).' }),
};

// zod runs object refinements even when a field failed, with that field's raw input: only
// compare what parsed.
function windowRules(q: { from?: unknown; to?: unknown; hours?: unknown }, ctx: z.RefinementCtx) {
  const from = q.from instanceof Date ? q.from : undefined;
  const to = q.to instanceof Date ? q.to : undefined;
  if (q.hours !== undefined && (q.from !== undefined || q.to !== undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: ['hours'],
      message: 'give either hours or from/to, not both',
    });
  }
  if (q.to !== undefined && q.from === undefined) {
    ctx.addIssue({ code: 'custom', path: ['from'], message: 'required when to is given' });
  }
  if (from && to && from.getTime() >= to.getTime()) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
  }
}

export const candleQuery = z.object(candleFields).superRefine(windowRules);

export const EXPORT_FORMATS = ['csv', 'ndjson'] as const;

export const candleExportQuery = z
  .object({
    ...candleFields,
    format: z
      .enum(EXPORT_FORMATS)
      .default('csv')
      .meta({ description: 'csv (with a header line) or ndjson.' }),
  })
  .superRefine(windowRules);

export const candleSchema = z
  .object({
    timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }),
    open: z.number().nullable(),
    high: z.number().nullable(),
    low: z.number().nullable(),
    close: z.number().nullable(),
    volume: z.number(),
    count: z
      .number()
      .int()
      .meta({ description: 'Observations in the bucket (0 for a filled bucket)' }),
  })
  .meta({ id: 'Candle' });
