import type { DatabasePool } from 'slonik';
import type { Logger } from '../../shared/logger.ts';
import {
  holdingsOf,
  portfolioOf,
  type HoldingRow,
  type PortfolioRow,
} from '../portfolio/holdings.ts';
import { valuePortfolio, type Portfolio, type PriceBook } from '../portfolio/valuation.ts';
import { Coalescer } from './coalescer.ts';

interface Tracked {
  /** Local connections of the user. */
  sockets: number;
  portfolio?: PortfolioRow;
  holdings: readonly HoldingRow[];
  heldCodes: Set<string>;
  lastSent?: string;
  loading?: Promise<void>;
}

export interface PortfolioTrackerOptions {
  pool: DatabasePool;
  prices: () => PriceBook;
  /** Sends the portfolio to the user's connections on this instance. */
  emit: (userId: number, portfolio: Portfolio) => void;
  intervalMs: number;
  logger: Logger;
}

/**
 * Portfolios of the users connected to this instance: holdings are kept in memory (re-read when
 * they change, on any instance), valued at the live prices whenever a held currency's price
 * moves, at most once per interval per user, and sent only when the result differs from what
 * was last sent.
 */
export class PortfolioTracker {
  private readonly options: PortfolioTrackerOptions;
  private readonly users = new Map<number, Tracked>();
  private readonly coalescer: Coalescer<number, true>;

  constructor(options: PortfolioTrackerOptions) {
    this.options = options;
    this.coalescer = new Coalescer(options.intervalMs, (userId) => this.send(userId));
  }

  /** A connection of the user opened; resolves with the current portfolio. */
  async join(userId: number): Promise<Portfolio> {
    const tracked = this.users.get(userId) ?? { sockets: 0, holdings: [], heldCodes: new Set() };
    tracked.sockets += 1;
    this.users.set(userId, tracked);
    if (!tracked.portfolio) await this.load(userId, tracked);
    return this.value(tracked);
  }

  leave(userId: number): void {
    const tracked = this.users.get(userId);
    if (!tracked) return;
    tracked.sockets -= 1;
    if (tracked.sockets <= 0) {
      this.users.delete(userId);
      this.coalescer.forget(userId);
    }
  }

  /** Prices of these codes moved: revalue the users holding any of them. */
  pricesMoved(codes: ReadonlySet<string>): void {
    for (const [userId, tracked] of this.users) {
      if (!tracked.portfolio) continue;
      for (const code of tracked.heldCodes) {
        if (codes.has(code)) {
          this.coalescer.push(userId, true);
          break;
        }
      }
    }
  }

  /** The user's holdings changed (on this instance or another): re-read them and revalue. */
  async holdingsChanged(userId: number): Promise<void> {
    const tracked = this.users.get(userId);
    if (!tracked) return;
    await this.load(userId, tracked);
    this.coalescer.push(userId, true);
  }

  /**
   * Re-reads every tracked user's holdings: the safety net for a holdings notification lost
   * while the adapter was reconnecting (NOTIFY is at-most-once).
   */
  async reloadAll(): Promise<void> {
    for (const userId of [...this.users.keys()]) {
      try {
        await this.holdingsChanged(userId);
      } catch (error) {
        this.options.logger.warn({ err: error, userId }, 'live: could not re-read holdings');
      }
    }
  }

  close(): void {
    this.coalescer.close();
    this.users.clear();
  }

  private async load(userId: number, tracked: Tracked): Promise<void> {
    const previous = tracked.loading ?? Promise.resolve();
    const next = previous.then(async () => {
      const portfolio = await portfolioOf(this.options.pool, userId);
      const holdings = await holdingsOf(this.options.pool, portfolio.id);
      tracked.portfolio = portfolio;
      tracked.holdings = holdings;
      tracked.heldCodes = new Set(holdings.filter((h) => h.shares > 0).map((h) => h.currencyCode));
    });
    tracked.loading = next.catch(() => {});
    await next;
  }

  private value(tracked: Tracked): Portfolio {
    if (!tracked.portfolio) throw new Error('portfolio not loaded');
    const portfolio = valuePortfolio(tracked.portfolio, tracked.holdings, this.options.prices());
    tracked.lastSent = JSON.stringify(portfolio);
    return portfolio;
  }

  private send(userId: number) {
    const tracked = this.users.get(userId);
    if (!tracked?.portfolio) return;
    const portfolio = valuePortfolio(tracked.portfolio, tracked.holdings, this.options.prices());
    const signature = JSON.stringify(portfolio);
    if (signature === tracked.lastSent) return;
    tracked.lastSent = signature;
    try {
      this.options.emit(userId, portfolio);
    } catch (error) {
      this.options.logger.error({ err: error, userId }, 'could not send a portfolio update');
    }
  }
}
