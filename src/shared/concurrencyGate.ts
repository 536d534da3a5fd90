import { OverloadedError } from './errors.ts';

/** Why a gate refused a piece of work. */
export type GateRefusal = 'queue full' | 'waited too long' | 'client gone';

export interface ConcurrencyGateOptions {
  /** Most pieces of work running at once. */
  limit: number;
  /** Most waiting for a turn; one more is refused with OverloadedError (default: unbounded). */
  maxWaiting?: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds?: number;
  /** Message of a refusal, or the function making it from the reason. */
  busyMessage?: string | ((reason: GateRefusal) => string);
  /** Told the running and waiting counts after every change (a gauge). */
  onChange?: (running: number, waiting: number) => void;
}

/** A gate's refusal (503 with Retry-After), with its reason for whoever counts refusals. */
export class GateRefusedError extends OverloadedError {
  readonly reason: GateRefusal;

  constructor(reason: GateRefusal, retryAfterSeconds: number, message: string) {
    super(retryAfterSeconds, message);
    this.reason = reason;
  }
}

export interface AcquireOptions {
  /** Ends the wait when it aborts (e.g. the client left): refused with OverloadedError. */
  signal?: AbortSignal;
  /** Longest wait for a place (ms), then refused with OverloadedError (default: no limit). */
  maxWaitMs?: number;
}

/** Gives a place back (straight to the next waiter, if any); calling it again does nothing. */
export type ReleasePlace = () => void;

/**
 * At most `limit` pieces of work at once (first come, first served); with `maxWaiting`, a bounded
 * queue, past which work is shed at once instead of waiting into a time-out. `run` holds a place
 * for one function; `acquire` holds one until released (e.g. an HTTP response closing).
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
    const release = await this.acquire();
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * Waits for a place and returns the function giving it back. Refused with GateRefusedError (503
   * with Retry-After) when the queue is full, the signal aborts or `maxWaitMs` passes; a refused
   * wait leaves the queue at once.
   */
  async acquire(options: AcquireOptions = {}): Promise<ReleasePlace> {
    await this.enter(options);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.leave();
    };
  }

  private async enter({ signal, maxWaitMs }: AcquireOptions): Promise<void> {
    if (signal?.aborted) throw this.refuse('client gone');
    if (this.running < this.options.limit) {
      this.running++;
      this.changed();
      return;
    }
    const { maxWaiting } = this.options;
    if (maxWaiting !== undefined && this.waiting.length >= maxWaiting) {
      throw this.refuse('queue full');
    }
    await new Promise<void>((resolve, reject) => {
      const admit = () => {
        stopWatching();
        resolve();
      };
      const giveUp = (reason: GateRefusal) => {
        const index = this.waiting.indexOf(admit);
        if (index >= 0) this.waiting.splice(index, 1);
        stopWatching();
        this.changed();
        reject(this.refuse(reason));
      };
      const timer =
        maxWaitMs === undefined
          ? undefined
          : setTimeout(() => giveUp('waited too long'), maxWaitMs);
      const onAbort = () => giveUp('client gone');
      const stopWatching = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort);
      this.waiting.push(admit);
      this.changed();
    });
  }

  private leave(): void {
    const next = this.waiting.shift();
    // The place passes straight to the next waiter: `running` stays as it is.
    if (next) next();
    else this.running--;
    this.changed();
  }

  private refuse(reason: GateRefusal): GateRefusedError {
    const { busyMessage = 'Too busy; try again shortly', retryAfterSeconds = 1 } = this.options;
    return new GateRefusedError(
      reason,
      retryAfterSeconds,
      typeof busyMessage === 'function' ? busyMessage(reason) : busyMessage,
    );
  }

  private changed(): void {
    this.options.onChange?.(this.running, this.waiting.length);
  }
}
