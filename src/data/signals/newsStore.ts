import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { bucketSql } from '../history/gridSql.ts';
import type { NewsSentimentInput } from '../routes/newsSentiment/schema.ts';

/**
 * Stores news sentiment events in one statement, whatever their number. The guard table
 * news_articles admits each article id once (the hypertable's own keys must include the time),
 * so an id already stored, or stored by a concurrent request, is skipped. Returns the article
 * ids this call stored. The items must not repeat an article id among themselves.
 */
export async function insertNewsSentiment(
  pool: CommonQueryMethods,
  items: readonly NewsSentimentInput[],
): Promise<Set<number>> {
  if (items.length === 0) return new Set();
  const rows = items.map((item) => ({
    article_id: item.articleId,
    publish_date: item.publishDate.toISOString(),
    title: item.title,
    source: item.source,
    url: item.url,
    positive_score: item.positiveScore,
    neutral_score: item.neutralScore,
    negative_score: item.negativeScore,
    composite_score: item.compositeScore,
    crypto_relevance: item.cryptoRelevance,
  }));
  const stored = await pool.anyFirst(sql.type(z.object({ article_id: z.number() }))`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS x(
        article_id bigint, publish_date timestamptz, title text, source text, url text,
        positive_score float8, neutral_score float8, negative_score float8,
        composite_score float8, crypto_relevance float8)
    ), admitted AS (
      INSERT INTO news_articles (article_id, publish_date)
      SELECT article_id, publish_date FROM input
      ON CONFLICT (article_id) DO NOTHING
      RETURNING article_id
    )
    INSERT INTO news_sentiment (
      article_id, publish_date, title, source, url, positive_score, neutral_score,
      negative_score, composite_score, crypto_relevance, weighted_score)
    SELECT i.article_id, i.publish_date, i.title, i.source, i.url, i.positive_score,
           i.neutral_score, i.negative_score, i.composite_score, i.crypto_relevance,
           i.composite_score * i.crypto_relevance
    FROM input i JOIN admitted USING (article_id)
    RETURNING article_id
  `);
  return new Set(stored);
}

const bucketRow = z.object({
  timestamp: z.date(),
  count: z.number(),
  weightedScore: z.number(),
  weightedScoreSum: z.number(),
  compositeScore: z.number(),
  cryptoRelevance: z.number(),
});

/** Count and scores of the articles published in each epoch-aligned bucket of [from, to). */
export async function sentimentPerBucket(
  pool: DatabasePool,
  range: { from: Date; to: Date; intervalSeconds: number },
) {
  return pool.any(sql.type(bucketRow)`
    SELECT ${bucketSql(range, sql.fragment`publish_date`)} AS timestamp,
           count(*) AS count,
           avg(weighted_score) AS "weightedScore",
           sum(weighted_score) AS "weightedScoreSum",
           avg(composite_score) AS "compositeScore",
           avg(crypto_relevance) AS "cryptoRelevance"
    FROM news_sentiment
    WHERE publish_date >= ${sql.timestamp(range.from)} AND publish_date < ${sql.timestamp(range.to)}
    GROUP BY 1
    ORDER BY 1
  `);
}
