import type { PriceTick } from '../../data/prices/priceEvents.ts';
import type { DisplayCurrency } from '../dataAnswers.ts';
import type { DataClient } from '../dataClient.ts';
import type { LivePrice } from './messages.ts';

const NO_DAY_STATS = {
  open24h: null,
  high24h: null,
  low24h: null,
  volume24h: null,
  change24h: null,
};

/**
 * The live gateway's view of current prices: read from the data module (at start and whenever
 * the price feed reconnects, since events sent while it was away are lost) and moved forward by
 * every price event. An instant never goes backwards.
 */
export class LivePriceBook {
  private readonly data: DataClient;
  private readonly byCode = new Map<string, DisplayCurrency>();
  private readonly timeByCode = new Map<string, number>();
  private loaded = false;
  /** Codes first seen in a price event: named by their code until the next reload. */
  private readonly unnamed = new Set<string>();
  private loading: Promise<LivePrice[]> | undefined;

  constructor(data: DataClient) {
    this.data = data;
  }

  get isLoaded(): boolean {
    return this.loaded;
  }

  /**
   * Whether a price event brought a code the last read of the data module lacked (its first
   * price came after that read): its name and logo come only with the next reload.
   */
  get hasUnnamed(): boolean {
    return this.unnamed.size > 0;
  }

  /** Current prices as the valuation code takes them. */
  get prices(): ReadonlyMap<string, DisplayCurrency> {
    return this.byCode;
  }

  quote(code: string): LivePrice | undefined {
    const currency = this.byCode.get(code);
    return currency && { code, value: currency.value, timestamp: currency.lastUpdated };
  }

  /** Re-reads every price from the data module; returns those that moved forward. */
  reload(): Promise<LivePrice[]> {
    this.loading ??= this.fetch().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  /** Loads once if never loaded (data module was down at start); errors are the caller's. */
  async ensureLoaded(): Promise<void> {
    if (!this.loaded) await this.reload();
  }

  /** Applies one price event; returns the prices it moved forward. */
  apply(tick: PriceTick): LivePrice[] {
    const time = Date.parse(tick.at);
    const moved: LivePrice[] = [];
    for (const [code, value] of Object.entries(tick.prices)) {
      if (this.advance(code, value, time, tick.at)) moved.push({ code, value, timestamp: tick.at });
    }
    return moved;
  }

  private async fetch(): Promise<LivePrice[]> {
    const current = await this.data.currentPrices({ fresh: true });
    this.loaded = true;
    const moved: LivePrice[] = [];
    for (const [code, currency] of current) {
      const time = Date.parse(currency.lastUpdated);
      const before = this.byCode.get(code);
      if (before)
        Object.assign(before, { currencyName: currency.currencyName, logoUrl: currency.logoUrl });
      else this.byCode.set(code, { ...currency });
      this.unnamed.delete(code);
      if (this.advance(code, currency.value, time, currency.lastUpdated, !before)) {
        moved.push({ code, value: currency.value, timestamp: currency.lastUpdated });
      }
    }
    return moved;
  }

  private advance(code: string, value: number, time: number, iso: string, isNew = false) {
    const seen = this.timeByCode.get(code);
    if (!isNew && seen !== undefined && time <= seen) return false;
    this.timeByCode.set(code, time);
    const currency = this.byCode.get(code);
    if (currency) {
      currency.value = value;
      currency.lastUpdated = iso;
    } else {
      this.unnamed.add(code);
      this.byCode.set(code, {
        currencyCode: code,
        currencyName: code,
        value,
        logoUrl: '',
        lastUpdated: iso,
        ...NO_DAY_STATS,
      });
    }
    return true;
  }
}
