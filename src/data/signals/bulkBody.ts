import type { Context } from 'koa';
import getRawBody from 'raw-body';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../shared/errors.ts';

export interface BulkLimits {
  maxItems: number;
  maxBytes: number;
}

export const BULK_BODY_TYPES = ['application/json', 'application/x-ndjson'];

export function describeBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return mib >= 1 ? `${Number(mib.toFixed(2))} MiB (${bytes} bytes)` : `${bytes} bytes`;
}

/** For route descriptions: the limits a bulk request must respect. */
export function describeBulkLimits(limits: BulkLimits): string {
  return `Limits: ${limits.maxItems} items and ${describeBytes(limits.maxBytes)} per request (413 beyond).`;
}

function tooManyItems(received: number, limits: BulkLimits): PayloadTooLargeError {
  return new PayloadTooLargeError(
    `The request holds ${received} items; the limit is ${limits.maxItems} items per bulk request`,
  );
}

async function readBodyText(ctx: Context, limits: BulkLimits): Promise<string> {
  const encoding = (ctx.get('content-encoding') || 'identity').toLowerCase();
  if (encoding !== 'identity') {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding '${encoding}' is not supported on bulk routes; send the body uncompressed`,
    );
  }
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, {
      length: ctx.get('content-length') || null,
      limit: limits.maxBytes,
    });
  } catch (error) {
    if ((error as { status?: number }).status === 413) {
      throw new PayloadTooLargeError(
        `The body exceeds the limit of ${describeBytes(limits.maxBytes)} per bulk request`,
      );
    }
    throw error;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new ValidationError('The body is not valid UTF-8', [], 'invalid_encoding');
  }
}

function parseJsonArray(text: string, limits: BulkLimits): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(
      `The body is not valid JSON: ${(error as Error).message}`,
      [],
      'invalid_json',
    );
  }
  if (!Array.isArray(parsed)) {
    throw new ValidationError(
      'The body must be a JSON array of items (or NDJSON, one item a line, as application/x-ndjson)',
      [{ path: 'body', message: 'expected an array' }],
    );
  }
  if (parsed.length > limits.maxItems) throw tooManyItems(parsed.length, limits);
  return parsed;
}

function parseNdjson(text: string, limits: BulkLimits): unknown[] {
  const lines = text.split('\n');
  const items: Array<{ line: number; text: string }> = [];
  lines.forEach((line, index) => {
    if (line.trim() !== '') items.push({ line: index + 1, text: line });
  });
  if (items.length > limits.maxItems) throw tooManyItems(items.length, limits);
  return items.map(({ line, text: itemText }) => {
    try {
      return JSON.parse(itemText) as unknown;
    } catch (error) {
      throw new ValidationError(
        `Line ${line} of the NDJSON body is not valid JSON: ${(error as Error).message}`,
        [{ path: `body.line.${line}`, message: 'not valid JSON' }],
        'invalid_json',
      );
    }
  });
}

/**
 * Reads a bulk body: a JSON array or NDJSON (one JSON item a line, blank lines skipped). A body
 * over the byte or item limit is a 413 that states the limit; a body that is not JSON is a 400
 * and nothing of it is stored.
 */
export async function readBulkItems(ctx: Context, limits: BulkLimits): Promise<unknown[]> {
  const text = await readBodyText(ctx, limits);
  return ctx.request.is('application/x-ndjson')
    ? parseNdjson(text, limits)
    : parseJsonArray(text, limits);
}
