import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RateLimiterPostgres, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.ts';
import { RateLimitedError } from '../../shared/errors.ts';

// Login throttling with rate-limiter-flexible on PostgreSQL (table app.login_limits, created by
// the migrations): failed attempts are counted per account (reset by a successful login) and
// per client address, each in a fixed window. Once either count reaches its limit, every
// attempt (even with the right password) gets 429 with Retry-After until the window ends.
// Unknown accounts are counted like real ones, so the answers reveal nothing.

interface Limit {
  limiter: RateLimiterPostgres;
  points: number;
}

function postgresLimiter(pgPool: pg.Pool, keyPrefix: string, points: number, minutes: number) {
  return {
    points,
    limiter: new RateLimiterPostgres({
      storeClient: pgPool,
      storeType: 'pool',
      schemaName: 'app',
      tableName: 'login_limits',
      tableCreated: true,
      clearExpiredByTimeout: false,
      keyPrefix,
      points,
      duration: Math.round(minutes * 60),
    }),
  };
}

/** Accounts are keyed by a hash of the normalised email: the limiter table holds no addresses. */
function accountKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('hex');
}

function isLimiterAnswer(value: unknown): value is RateLimiterRes {
  return typeof value === 'object' && value !== null && 'msBeforeNext' in value;
}

export class LoginThrottle {
  private readonly account: Limit;
  private readonly address: Limit;

  constructor(pgPool: pg.Pool, config: Config) {
    this.account = postgresLimiter(
      pgPool,
      'login_account',
      config.LOGIN_MAX_FAILURES_PER_ACCOUNT,
      config.LOGIN_ACCOUNT_WINDOW_MINUTES,
    );
    this.address = postgresLimiter(
      pgPool,
      'login_address',
      config.LOGIN_MAX_FAILURES_PER_ADDRESS,
      config.LOGIN_ADDRESS_WINDOW_MINUTES,
    );
  }

  /** 429 when the account or the address has used up its failures. */
  async check(email: string, address: string): Promise<void> {
    const [byAccount, byAddress] = await Promise.all([
      this.account.limiter.get(accountKey(email)),
      this.address.limiter.get(address),
    ]);
    const waits = [
      exhausted(byAccount, this.account.points),
      exhausted(byAddress, this.address.points),
    ];
    const waitMs = Math.max(...waits);
    if (waitMs > 0) {
      throw new RateLimitedError(
        waitMs / 1000,
        'Too many failed sign-in attempts; try again later',
      );
    }
  }

  async recordFailure(email: string, address: string): Promise<void> {
    await Promise.all([
      penalise(this.account.limiter, accountKey(email)),
      penalise(this.address.limiter, address),
    ]);
  }

  async recordSuccess(email: string): Promise<void> {
    await this.account.limiter.delete(accountKey(email));
  }
}

function exhausted(state: RateLimiterRes | null, points: number): number {
  if (!state || state.consumedPoints < points) return 0;
  return Math.max(state.msBeforeNext, 1000);
}

async function penalise(limiter: RateLimiterPostgres, key: string): Promise<void> {
  try {
    await limiter.penalty(key, 1);
  } catch (error) {
    if (!isLimiterAnswer(error)) throw error;
  }
}
