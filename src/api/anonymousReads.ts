import type { Context } from 'koa';
import { OverloadedError } from '../shared/errors.ts';
import { shedAnswers } from '../shared/http/shedAnswers.ts';
import { currentUserId } from './session/requireUser.ts';

// Anonymous callers may ask the public history and candle routes for years of minutes: each such
// answer is a long scan in the database and tens of thousands of points through both services'
// event loops. The per-address rate limit bounds one address, not what all anonymous requests
// cost together, and the data module's own concurrency limit (several at once, with a queue)
// would let them fill both cores. So the anonymous reads in progress, of every address together,
// may ask for at most a budget of points (buckets, the same count the point cap uses, a measure
// of the work known before any of it is done): a read that does not fit is answered 503 with
// Retry-After at once, never queued (a queue would only line up more of the same work behind the
// running one). One read always fits when nothing else runs. Small reads (a dashboard's
// sparklines, a few dozen points each) pass beside a large one. Signed-in users are not counted:
// they have their own, looser rate limit and the data module's limit.

const GROUP = 'anonymous market read';
// No waiting room: recorded as the gates record a full queue.
const shed = shedAnswers(GROUP, 'queue_full');

export class AnonymousReadBudget {
  private inUse = 0;
  private readonly maxPoints: number;

  constructor(maxPoints: number) {
    this.maxPoints = maxPoints;
  }

  /** Points the anonymous reads in progress have asked for. */
  get pointsInUse(): number {
    return this.inUse;
  }

  /**
   * Admits the request's read of `points` (signed-in requests pass uncounted), holding its share
   * until the response is over (sent, or its client gone); or throws OverloadedError at once.
   */
  admit(ctx: Context, points: number): void {
    if (currentUserId(ctx) !== undefined) return;
    if (this.inUse > 0 && this.inUse + points > this.maxPoints) {
      shed(ctx.req, ctx.res);
      throw new OverloadedError(
        1,
        `Too many ${GROUP}s at once (${this.inUse} of ${this.maxPoints} points in progress); ` +
          'retry shortly, or sign in.',
      );
    }
    this.inUse += points;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.inUse -= points;
    };
    const res = ctx.res;
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
  }
}
