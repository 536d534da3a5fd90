import type { z } from 'zod';
import { ExchangeClient, type ExchangeClientOptions } from '../http.ts';
import {
  SourceError,
  type HttpSourceOptions,
  type PriceRequest,
  type PriceSource,
} from './types.ts';

/** What sets one exchange adapter apart: where it asks, how often, and how it reads the answer. */
export interface ExchangeSourceSpec<Answer> {
  name: string;
  /** Path (and query) of the one request that prices every code, relative to `baseUrl`. */
  path: string;
  /** Least time between two calls, so the harvester stays inside the exchange's public limits. */
  minSpacingMs: number;
  isTransient?: ExchangeClientOptions['isTransient'];
  /** The answer's expected shape; any other shape is `malformed`. */
  answer: z.ZodType<Answer>;
  /** What the answer is called in the `malformed` error ("ticker", "exchange-rates"). */
  answerName: string;
  /** The prices of `codes` found in the answer; `client` is there for body-level rate limits. */
  prices(answer: Answer, codes: string[], client: ExchangeClient): Map<string, number>;
}

/** A price source that GETs one JSON endpoint of an exchange through its own ExchangeClient. */
export function createExchangeSource<Answer>(
  options: HttpSourceOptions,
  spec: ExchangeSourceSpec<Answer>,
): PriceSource {
  const { name } = spec;
  const client = new ExchangeClient({
    source: name,
    timeoutMs: options.timeoutMs,
    retries: options.retries,
    minSpacingMs: spec.minSpacingMs,
    isTransient: spec.isTransient,
  });
  return {
    name,
    async fetchPrices({ codes, signal, deadline }: PriceRequest) {
      const url = new URL(spec.path, options.baseUrl);
      return client.getJson(url, { signal, deadline }, (body) => {
        const answer = spec.answer.safeParse(body);
        if (!answer.success) {
          throw new SourceError(name, 'malformed', `unexpected ${spec.answerName} shape`);
        }
        return spec.prices(answer.data, codes, client);
      });
    },
  };
}
