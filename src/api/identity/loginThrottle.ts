import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RateLimiterPostgres, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.ts';
import { RateLimitedError } from '../../shared/errors.ts';

// Login throttling with rate-limiter-flexible on PostgreSQL (table app.login_limits, created by
// the migrations): failed attempts are counted per account (reset by a successful login) and
// per client address, each in a fixed window. Once either count reaches its limit, every
// attempt (even with the right password) gets 429 with Retry-After until the window ends. Every
// attempt is counted before its password is checked (see admit). A browser with a device cookie
// of the account (see deviceCookie.ts) is held only to the account limit.
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
  private readonly signups: Limit;

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
    this.signups = postgresLimiter(pgPool, 'signup_address', config.SIGNUP_MAX_PER_ADDRESS, 60);
  }

  /** Counts a sign-up attempt from this address (one atomic upsert); 429 past the hourly limit. */
  async admitSignup(address: string): Promise<void> {
    try {
      await this.signups.limiter.consume(address);
    } catch (error) {
      if (!isLimiterAnswer(error)) throw error;
      const waitSeconds = Math.max(error.msBeforeNext, 1000) / 1000;
      throw new RateLimitedError(
        waitSeconds,
        'Too many sign-ups from this address; try again later',
      );
    }
  }

  /**
   * Counts this attempt against the account and the address before the password is checked, in
   * one atomic upsert per limit: a parallel burst cannot all pass a check made before any of its
   * failures is recorded. 429 once either count passes its limit. An attempt from a known device
   * of the account counts against the account only.
   */
  async admit(email: string, address: string, knownDevice = false): Promise<void> {
    const results = await Promise.allSettled([
      this.account.limiter.consume(accountKey(email)),
      ...(knownDevice ? [] : [this.address.limiter.consume(address)]),
    ]);
    let waitMs = 0;
    for (const result of results) {
      if (result.status === 'fulfilled') continue;
      if (!isLimiterAnswer(result.reason)) throw result.reason;
      waitMs = Math.max(waitMs, result.reason.msBeforeNext, 1000);
    }
    if (waitMs > 0) {
      throw new RateLimitedError(
        waitMs / 1000,
        'Too many failed sign-in attempts; try again later',
      );
    }
  }

  /**
   * A correct password: the account's count starts again, and the address gets back the point
   * this attempt took (it was not a failure), keeping the failures it had.
   */
  async recordSuccess(email: string, address: string, knownDevice = false): Promise<void> {
    await Promise.all([
      this.account.limiter.delete(accountKey(email)),
      ...(knownDevice ? [] : [this.address.limiter.reward(address, 1)]),
    ]);
  }
}
