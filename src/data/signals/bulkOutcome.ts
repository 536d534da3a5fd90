import { z } from 'zod';
import { UnprocessableError, type ErrorDetail } from '../../shared/errors.ts';
import { describeFirst, issuesToDetails } from '../../shared/http/routes.ts';
import { counter } from '../../shared/metrics.ts';

/** Why one item of a bulk request was not stored: the error the single route would answer. */
export interface Rejection {
  index: number;
  status: 400 | 422;
  code: string;
  message: string;
  details: ErrorDetail[];
}

export interface ValidItem<T> {
  index: number;
  value: T;
}

export interface BulkOutcome {
  received: number;
  accepted: number;
  duplicates: number;
  rejected: number;
  rejections: Rejection[];
}

export type SignalKind = 'news_sentiment' | 'prediction' | 'training_session';

const signalItems = counter(
  'data_signal_items_total',
  'Signal inputs received, by kind and outcome (accepted, duplicate, rejected).',
  ['kind', 'outcome'],
);

/** Validates each item with the single route's schema; failures carry the same messages. */
export function validateItems<S extends z.ZodType>(
  items: unknown[],
  schema: S,
): { valid: Array<ValidItem<z.output<S>>>; rejections: Rejection[] } {
  const valid: Array<ValidItem<z.output<S>>> = [];
  const rejections: Rejection[] = [];
  items.forEach((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) {
      valid.push({ index, value: parsed.data });
      return;
    }
    const details = issuesToDetails('body', parsed.error);
    rejections.push({
      index,
      status: 400,
      code: 'validation_error',
      message: describeFirst('body', details),
      details,
    });
  });
  return { valid, rejections };
}

/** A 422 for an item that is well-formed but refers to something that does not exist. */
export function unprocessable(
  index: number,
  code: string,
  message: string,
  path: string,
): Rejection {
  return { index, status: 422, code, message, details: [{ path, message }] };
}

/** The single routes answer with the one rejection their item got. */
export function throwRejection(rejection: Rejection): never {
  throw new UnprocessableError(rejection.message, rejection.code, rejection.details);
}

export function summarise(
  kind: SignalKind,
  received: number,
  accepted: number,
  rejections: Rejection[],
): BulkOutcome {
  const duplicates = received - accepted - rejections.length;
  signalItems.inc({ kind, outcome: 'accepted' }, accepted);
  signalItems.inc({ kind, outcome: 'duplicate' }, duplicates);
  signalItems.inc({ kind, outcome: 'rejected' }, rejections.length);
  return {
    received,
    accepted,
    duplicates,
    rejected: rejections.length,
    rejections: [...rejections].sort((a, b) => a.index - b.index),
  };
}

export const rejectionSchema = z
  .object({
    index: z.number().int().meta({ description: 'Position of the item in the request, from 0' }),
    status: z.union([z.literal(400), z.literal(422)]),
    code: z.string().meta({ example: 'validation_error' }),
    message: z.string(),
    details: z.array(z.object({ path: z.string().optional(), message: z.string() })),
  })
  .meta({ id: 'BulkRejection', description: 'Why one item was not stored.' });

export const bulkOutcomeSchema = z
  .object({
    received: z.number().int(),
    accepted: z.number().int().meta({ description: 'Items stored by this request' }),
    duplicates: z
      .number()
      .int()
      .meta({ description: 'Items already stored, or repeated earlier in the request' }),
    rejected: z.number().int(),
    rejections: z.array(rejectionSchema),
  })
  .meta({ id: 'BulkOutcome' });

export const successfulSchema = z
  .object({ successful: z.literal(true) })
  .meta({ id: 'OperationSuccessfulResponse' });
