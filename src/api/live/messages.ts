import { z } from 'zod';
import { currencyCode } from '../routes/portfolio/schema.ts';

// What clients may send on /trader, and the acknowledgement shapes. Every handler validates its
// payload here first; a bad one gets { ok: false, error } and changes nothing.

/** Codes one subscribe or unsubscribe may name. */
export const MAX_CODES_PER_MESSAGE = 500;
/** Rooms one connection may be in through subscriptions (bounds memory per client). */
export const MAX_SUBSCRIPTIONS_PER_SOCKET = 2000;

const codes = z
  .array(currencyCode)
  .min(1, 'name at least one currency code')
  .max(MAX_CODES_PER_MESSAGE, `at most ${MAX_CODES_PER_MESSAGE} codes per message`);

export const subscribeMessage = z.object({ codes });
export const unsubscribeMessage = z.object({ codes });

/**
 * Optional handshake `auth`: codes to subscribe to at once (what a reconnecting client sends),
 * and the delivery mode.
 */
export const handshakeAuth = z
  .object({
    codes: z.array(currencyCode).max(MAX_CODES_PER_MESSAGE).optional(),
    /** One `prices` event per cycle instead of a `price` event per currency. */
    batch: z.boolean().optional(),
  })
  .catch({});

export interface LivePrice {
  code: string;
  value: number;
  /** ISO 8601 instant the price stands for. */
  timestamp: string;
}

export interface LiveError {
  code: string;
  message: string;
  details: Array<{ path: string; message: string }>;
}

export function errorAck(code: string, message: string, details: LiveError['details'] = []) {
  return { ok: false as const, error: { code, message, details } };
}

/** The zod issues of a refused message as an error acknowledgement. */
export function invalidMessageAck(event: string, error: z.ZodError) {
  return errorAck(
    'invalid_message',
    `Invalid ${event} message: ${error.issues.map((i) => `${i.path.join('.') || 'payload'} ${i.message}`).join('; ')}`,
    error.issues.map((issue) => ({
      path: ['payload', ...issue.path].join('.'),
      message: issue.message,
    })),
  );
}
