/**
 * At most one emission per key per interval, the latest value winning: the first push after a
 * quiet interval goes out at once (no added latency for the usual once-per-cycle update), later
 * pushes within the interval are held and the last of them goes out when the interval ends.
 */
export class Coalescer<K, V> {
  private readonly intervalMs: number;
  private readonly emit: (key: K, value: V) => void;
  private readonly state = new Map<
    K,
    { lastEmitAt: number; pending?: { value: V }; timer?: NodeJS.Timeout }
  >();

  constructor(intervalMs: number, emit: (key: K, value: V) => void) {
    this.intervalMs = intervalMs;
    this.emit = emit;
  }

  push(key: K, value: V): void {
    const now = Date.now();
    const entry = this.state.get(key);
    if (!entry) {
      this.state.set(key, { lastEmitAt: now });
      this.emit(key, value);
      return;
    }
    if (entry.timer) {
      entry.pending = { value };
      return;
    }
    const wait = entry.lastEmitAt + this.intervalMs - now;
    if (wait <= 0) {
      entry.lastEmitAt = now;
      this.emit(key, value);
      return;
    }
    entry.pending = { value };
    entry.timer = setTimeout(() => this.flush(key), wait);
  }

  /** Drops what is held for a key (its subscriber left). */
  forget(key: K): void {
    const entry = this.state.get(key);
    if (entry?.timer) clearTimeout(entry.timer);
    this.state.delete(key);
  }

  close(): void {
    for (const entry of this.state.values()) if (entry.timer) clearTimeout(entry.timer);
    this.state.clear();
  }

  private flush(key: K) {
    const entry = this.state.get(key);
    if (!entry?.pending) return;
    const { value } = entry.pending;
    entry.pending = undefined;
    entry.timer = undefined;
    entry.lastEmitAt = Date.now();
    this.emit(key, value);
  }
}
