import { z } from 'zod';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity } from '../../auth.ts';
import { BULK_BODY_TYPES, describeBulkLimits, readBulkItems } from '../../signals/bulkBody.ts';
import {
  bulkOutcomeSchema,
  successfulSchema,
  summarise,
  validateItems,
  type ValidItem,
} from '../../signals/bulkOutcome.ts';
import { insertNewsSentiment, sentimentPerBucket } from '../../signals/newsStore.ts';
import { assertPointCap, resolveRange } from '../../signals/readQuery.ts';
import type { SignalRouteDeps } from '../../signals/deps.ts';
import { idempotencyHeaders, writeOnce } from '../../signals/idempotency.ts';
import {
  newsSentimentQuery,
  newsSentimentRequestSchema,
  sentimentBucketsSchema,
  type NewsSentimentInput,
} from './schema.ts';

/** The first item of each article id; later ones are duplicates within the request. */
function firstPerArticle(items: Array<ValidItem<NewsSentimentInput>>) {
  const seen = new Map<number, NewsSentimentInput>();
  for (const { value } of items) if (!seen.has(value.articleId)) seen.set(value.articleId, value);
  return [...seen.values()];
}

export function registerNewsSentimentRoutes(registry: RouteRegistry, deps: SignalRouteDeps) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/news-sentiment/add',
      operationId: 'addNewsSentiment',
      summary: 'Store a news sentiment event',
      description: 'A repeated articleId is accepted and stored once (the first version is kept).',
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: newsSentimentRequestSchema,
      responses: { 200: { description: 'Stored (or already stored)', schema: successfulSchema } },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { body, headers }) => {
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addNewsSentiment', key, payload: ctx.request.body };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const stored = await insertNewsSentiment(db, [body]);
          summarise('news_sentiment', 1, stored.size, []);
          return { status: 200, body: { successful: true } };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/news-sentiment/add/bulk',
      operationId: 'addNewsSentimentBulk',
      summary: 'Store many news sentiment events in one request',
      description:
        'A JSON array, or NDJSON (`application/x-ndjson`, one event a line). Each item is checked ' +
        'like the single route; invalid items are listed with their index and reasons, the others ' +
        'are stored in one statement. Article ids already stored or repeated in the request count ' +
        `as duplicates. ${describeBulkLimits(deps.bulk)}`,
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: z.array(newsSentimentRequestSchema),
      bodyTypes: BULK_BODY_TYPES,
      rawBody: true,
      responses: { 200: { description: 'Counts and rejections', schema: bulkOutcomeSchema } },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { headers }) => {
        const items = await readBulkItems(ctx, deps.bulk);
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addNewsSentimentBulk', key, payload: items };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const { valid, rejections } = validateItems(items, newsSentimentRequestSchema);
          const stored = await insertNewsSentiment(db, firstPerArticle(valid));
          const outcome = summarise('news_sentiment', items.length, stored.size, rejections);
          return { status: 200, body: outcome };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/news-sentiment',
      operationId: 'newsSentimentPerBucket',
      cancelWhenAbandoned: true,
      summary: 'News sentiment per time bucket',
      description:
        'Articles are counted in the bucket of their publishDate. Buckets are aligned to the Unix ' +
        'epoch and stamped with their start; empty buckets are left out.',
      tags: ['signals'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read')],
      query: newsSentimentQuery,
      responses: { 200: { description: 'Buckets, oldest first', schema: sentimentBucketsSchema } },
      errors: [401, 403, 503],
      handler: async (ctx, { query }) => {
        const range = resolveRange(query);
        assertPointCap(range, query.intervalSeconds, deps.maxPoints);
        const rows = await deps.reads.quick((db) =>
          sentimentPerBucket(db, { ...range, intervalSeconds: query.intervalSeconds }),
        );
        ctx.body = {
          buckets: rows.map((row) => ({ ...row, timestamp: row.timestamp.toISOString() })),
        };
      },
    }),
  );
}
