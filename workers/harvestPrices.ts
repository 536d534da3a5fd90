import type { Task } from 'graphile-worker';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  declareSourceSeries,
  harvestPrices,
  type SourceOutcome,
} from '../src/data/market/harvester.ts';
import { createPriceSources, type PriceSource } from '../src/data/market/sources/index.ts';
import { recordHarvest } from '../src/data/prices/recordHarvest.ts';
import type { Logger } from '../src/shared/logger.ts';
import { counter, harvestCycleDuration as cycleDuration } from '../src/shared/metrics.ts';
import type { Runtime } from '../src/shared/runtime.ts';
import { slotTask, type SlotContext } from '../src/worker/recurring.ts';
import { claimSlot } from '../src/worker/slots.ts';

export const HARVEST_TASK = 'harvest_prices';

const pricesWritten = counter(
  'harvest_prices_written_total',
  'Prices written by harvest cycles, by source.',
  ['source'],
);

/**
 * written: prices stored and announced. superseded: this slot or a later one was already
 * written (a second job for the slot, or cycles finishing out of order). stale: the prices came
 * in after the slot's time had passed. empty: no source priced anything. no_currencies: the
 * currency list is empty (the data role installs it).
 */
export type HarvestOutcome = 'written' | 'superseded' | 'stale' | 'empty' | 'no_currencies';

export interface HarvestCycleResult {
  outcome: HarvestOutcome;
  prices: number;
  outcomes: SourceOutcome[];
}

export interface HarvestCycleDeps {
  runtime: Runtime;
  sources: PriceSource[];
  signal?: AbortSignal;
  /** Reports source failures once per streak rather than every cycle. */
  failures?: FailureLog;
}

/**
 * One harvest cycle for one slot: prices of every currency from the configured sources, then, in
 * one transaction, the slot claimed, observations and snapshots written and the price event sent.
 */
export async function runHarvestCycle(
  deps: HarvestCycleDeps,
  slot: SlotContext,
): Promise<HarvestCycleResult> {
  const { runtime, sources } = deps;
  const stopTimer = cycleDuration.startTimer();
  const finish = (outcome: HarvestOutcome, prices = 0, outcomes: SourceOutcome[] = []) => {
    stopTimer({ outcome });
    return { outcome, prices, outcomes };
  };

  const codes = await runtime.pool.anyFirst(
    sql.type(z.object({ code: z.string() }))`SELECT code FROM currencies ORDER BY code`,
  );
  if (codes.length === 0) return finish('no_currencies');

  const fetchDeadline = fetchDeadlineOf(slot);
  const timeout = AbortSignal.timeout(Math.max(1, fetchDeadline - Date.now()));
  const signal = deps.signal ? AbortSignal.any([deps.signal, timeout]) : timeout;
  const harvest = await harvestPrices(sources, {
    codes: [...codes],
    at: slot.start,
    deadline: fetchDeadline,
    signal,
  });
  deps.failures?.report(harvest.outcomes);
  if (harvest.prices.length === 0) return finish('empty', 0, harvest.outcomes);
  if (Date.now() >= slot.deadline) return finish('stale', 0, harvest.outcomes);

  const written = await runtime.pool.transaction(async (tx) => {
    if (!(await claimSlot(tx, HARVEST_TASK, slot.start))) return null;
    return recordHarvest(tx, {
      at: slot.start,
      prices: harvest.prices,
      settleSeconds: runtime.config.ROLLUP_SETTLE_SECONDS,
    });
  });
  if (!written) return finish('superseded', 0, harvest.outcomes);
  for (const { source } of harvest.prices) pricesWritten.inc({ source });
  return finish('written', harvest.prices.length, harvest.outcomes);
}

/**
 * Sources get about one interval (at least a second from now) to answer, so a slow exchange
 * delays the cycle's other prices by no more than that; never past the slot's staleness, less a
 * moment for the write.
 */
export function fetchDeadlineOf(slot: SlotContext, now = Date.now()): number {
  const latest = slot.deadline - Math.min(500, slot.intervalMs / 4);
  return Math.min(latest, Math.max(slot.start.getTime() + slot.intervalMs, now + 1000));
}

/** The `harvest_prices` task; its sources live as long as the process (rate-limit state). */
export function createHarvestTask(
  runtime: Runtime,
  sources: PriceSource[] = createPriceSources(runtime.config),
): Task {
  const log = runtime.logger.child({ task: HARVEST_TASK });
  const failures = new FailureLog(log);
  declareSourceSeries(sources);
  let warnedNoCurrencies = false;
  return slotTask(HARVEST_TASK, runtime.logger, async (slot, helpers) => {
    const result = await runHarvestCycle(
      { runtime, sources, signal: helpers.abortSignal, failures },
      slot,
    );
    if (result.outcome === 'no_currencies' && !warnedNoCurrencies) {
      warnedNoCurrencies = true;
      log.warn('no currencies to harvest yet; the data role installs the list when it starts');
    }
    // Failing sources are reported by the failure log; only a late write deserves a warning.
    const level = result.outcome === 'stale' ? 'warn' : 'debug';
    log[level](
      { slot: slot.start.toISOString(), outcome: result.outcome, prices: result.prices },
      'harvest cycle',
    );
  });
}

/** Logs a source's failure when a streak starts and its recovery when it ends. */
export class FailureLog {
  readonly #log: Logger;
  readonly #failing = new Set<string>();

  constructor(log: Logger) {
    this.#log = log;
  }

  report(outcomes: SourceOutcome[]) {
    for (const { source, error } of outcomes) {
      if (error && !this.#failing.has(source)) {
        this.#failing.add(source);
        this.#log.warn(
          { source, reason: error.reason, err: error.message },
          'price source failing',
        );
      } else if (!error && this.#failing.delete(source)) {
        this.#log.info({ source }, 'price source recovered');
      }
    }
  }
}
