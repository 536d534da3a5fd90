import {
  harvestSourceFetchDuration as fetchDuration,
  harvestSourceFetchErrors as fetchErrors,
  harvestSourceLastSuccess as lastSuccess,
} from '../../shared/metrics.ts';
import type { HarvestedPrice } from '../prices/recordHarvest.ts';
import {
  SOURCE_FAILURES,
  SourceError,
  type PriceRequest,
  type PriceSource,
} from './sources/index.ts';

/**
 * Starts every source's fetch-error series at 0, so rate() and increase() over them answer 0
 * rather than nothing until a source first fails.
 */
export function declareSourceSeries(sources: PriceSource[]): void {
  for (const source of sources) {
    for (const reason of SOURCE_FAILURES) fetchErrors.inc({ source: source.name, reason }, 0);
  }
}

export interface SourceOutcome {
  source: string;
  priced: number;
  error?: SourceError;
}

export interface Harvest {
  prices: HarvestedPrice[];
  outcomes: SourceOutcome[];
}

/**
 * Asks every source at once and keeps, for each currency, the price of the first source (in the
 * configured order) that has one. A failing source costs only its own prices; a currency no
 * source prices is left out of this cycle.
 */
export async function harvestPrices(
  sources: PriceSource[],
  request: PriceRequest,
): Promise<Harvest> {
  const answers = await Promise.all(sources.map((source) => askSource(source, request)));
  const chosen = new Map<string, HarvestedPrice>();
  for (const [i, answer] of answers.entries()) {
    const source = sources[i]!.name;
    for (const [code, price] of answer.prices) {
      if (!chosen.has(code)) chosen.set(code, { code, price, source });
    }
  }
  return {
    prices: [...chosen.values()],
    outcomes: answers.map(({ outcome }) => outcome),
  };
}

async function askSource(source: PriceSource, request: PriceRequest) {
  const stopTimer = fetchDuration.startTimer({ source: source.name });
  try {
    const prices = await source.fetchPrices(request);
    if (prices.size > 0) lastSuccess.set({ source: source.name }, Date.now() / 1000);
    return { prices, outcome: { source: source.name, priced: prices.size } };
  } catch (cause) {
    const error =
      cause instanceof SourceError
        ? cause
        : new SourceError(source.name, 'exchange_error', String(cause), { cause });
    fetchErrors.inc({ source: source.name, reason: error.reason });
    return {
      prices: new Map<string, number>(),
      outcome: { source: source.name, priced: 0, error },
    };
  } finally {
    stopTimer();
  }
}
