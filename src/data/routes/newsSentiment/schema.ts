import { z } from 'zod';
import { score, text } from '../../signals/fields.ts';
import { fromParam, intervalParam, rangeIsOrdered, toParam } from '../../signals/readQuery.ts';
import { timestampSchema } from '../../signals/timestamp.ts';

export const newsSentimentRequestSchema = z
  .object({
    articleId: z.number().int().meta({
      description: 'Unique key of the article; a repeated id is accepted and stored once.',
    }),
    title: text(1, 1000),
    publishDate: timestampSchema,
    source: text(1, 200),
    url: text(1, 2048).pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' })),
    positiveScore: score,
    neutralScore: score,
    negativeScore: score,
    compositeScore: score,
    cryptoRelevance: score,
    lastUpdated: z
      .unknown()
      .optional()
      .meta({ description: 'Ignored: the server stamps the time it receives the event.' }),
  })
  .meta({
    id: 'NewsSentimentRequest',
    description:
      'A news sentiment event. The server stores weightedScore = compositeScore × cryptoRelevance. ' +
      'Unknown fields are ignored.',
  });
export type NewsSentimentInput = z.output<typeof newsSentimentRequestSchema>;

export const newsSentimentQuery = z
  .object({
    from: fromParam,
    to: toParam,
    intervalSeconds: intervalParam(
      'Width of the buckets in seconds, aligned to the Unix epoch.',
    ).default(3600),
  })
  .superRefine(rangeIsOrdered);

export const sentimentBucketSchema = z
  .object({
    timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }),
    count: z.number().int().meta({ description: 'Articles published in the bucket' }),
    weightedScore: z
      .number()
      .meta({ description: 'Mean of weightedScore (compositeScore × cryptoRelevance)' }),
    weightedScoreSum: z.number().meta({ description: 'Sum of weightedScore' }),
    compositeScore: z.number().meta({ description: 'Mean compositeScore' }),
    cryptoRelevance: z.number().meta({ description: 'Mean cryptoRelevance' }),
  })
  .meta({ id: 'SentimentBucket' });

export const sentimentBucketsSchema = z
  .object({ buckets: z.array(sentimentBucketSchema) })
  .meta({ id: 'SentimentBuckets' });
