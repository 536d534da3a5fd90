import { OverloadedError } from './errors.ts';

export interface ConcurrencyGateOptions {
  /** Most pieces of work running at once. */
  limit: number;
  /** Most waiting for a turn; one more is refused with OverloadedError (default: unbounded). */
  maxWaiting?: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds?: number;
  /** Message of a refusal. */
  busyMessage?: string;
  /** Told the running and waiting counts after every change (a gauge). */
  onChange?: (running: number, waiting: number) => void;
}

/**
 * At most `limit` pieces of work at once (first come, first served); with `maxWaiting`, a bounded
 * queue, past which work is shed at once instead of waiting into a time-out.
 */
export class ConcurrencyGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly options: ConcurrencyGateOptions;

  constructor(options: ConcurrencyGateOptions) {
    this.options = options;
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    const { limit, maxWaiting } = this.options;
    if (this.running < limit) {
      this.running++;
      this.changed();
      return;
    }
    if (maxWaiting !== undefined && this.waiting.length >= maxWaiting) {
      throw new OverloadedError(
        this.options.retryAfterSeconds ?? 1,
        this.options.busyMessage ?? 'Too busy; try again shortly',
      );
    }
    // The releasing side hands its slot over: `running` stays as it is.
    const turn = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.changed();
    await turn;
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
    this.changed();
  }

  private changed(): void {
    this.options.onChange?.(this.running, this.waiting.length);
  }
}
