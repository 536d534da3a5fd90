import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/shared/config.ts';
import { ReadRouter, isServerUnavailable } from '../../src/shared/db/readRouter.ts';
import { lsnBytes, secondsBehind } from '../../src/shared/db/replicaMonitor.ts';

// The lag arithmetic over WAL positions, and the configuration of replicas.

const sample = (at: number, lsn: string) => ({ at, lsn: lsnBytes(lsn) });

describe('replica lag from WAL positions', () => {
  test('WAL positions compare as numbers across the 32-bit boundary', () => {
    expect(lsnBytes('1/0') > lsnBytes('0/FFFFFFFF')).toBe(true);
    expect(lsnBytes('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
  });

  test('an idle primary and a caught-up replica: no lag, however old the last write', () => {
    // The primary wrote nothing for an hour: every sample holds the same position.
    const samples = [sample(0, '0/5000'), sample(1_800_000, '0/5000'), sample(3_600_000, '0/5000')];
    expect(secondsBehind(samples, lsnBytes('0/5000'), samples.at(-1)!)).toEqual({
      seconds: 0,
      exact: true,
    });
  });

  test('behind: the age of the newest primary position it has replayed', () => {
    const samples = [sample(0, '0/1000'), sample(1000, '0/2000'), sample(5000, '0/3000')];
    const behind = (lsn: string) => secondsBehind(samples, lsnBytes(lsn), samples.at(-1)!);
    expect(behind('0/2000')).toEqual({ seconds: 4, exact: true });
    expect(behind('0/2FFF')).toEqual({ seconds: 4, exact: true });
    // Behind every kept sample: at least as old as the oldest, and not known better.
    expect(behind('0/0')).toEqual({ seconds: 5, exact: false });
  });

  test('a replica behind on the very first probe is not taken for caught up', () => {
    const first = sample(0, '0/9000');
    expect(secondsBehind([first], lsnBytes('0/1000'), first)).toEqual({ seconds: 0, exact: false });
  });
});

describe('READ_DATABASE_URL', () => {
  test('one or more comma-separated PostgreSQL URLs, each with a user', () => {
    const config = loadConfig({
      READ_DATABASE_URL: 'postgres://a@10.0.0.2:5432/platform, postgresql://10.0.0.3/platform',
      PGUSER: 'ignored',
    });
    expect(config.READ_DATABASE_URL).toHaveLength(2);
    expect(config.READ_DATABASE_URL![1]).toMatch(/^postgresql:\/\/[^@]+@10\.0\.0\.3\/platform$/);
    expect(config.REPLICA_MAX_LAG_SECONDS).toBe(10);
    expect(loadConfig({}).READ_DATABASE_URL).toBeUndefined();
  });

  test('anything else is refused at start-up with the variable named', () => {
    expect(() => loadConfig({ READ_DATABASE_URL: 'http://x/y' })).toThrow(/READ_DATABASE_URL/);
    expect(() => loadConfig({ REPLICA_MAX_LAG_SECONDS: '-1' })).toThrow(/REPLICA_MAX_LAG_SECONDS/);
  });

  test('without replicas every read goes to the primary read pool', async () => {
    const primary = { pool: { name: 'main' }, readPool: { name: 'read' } } as never;
    const router = new ReadRouter(primary);
    expect(router.hasReplicas).toBe(false);
    expect(await router.expensive(async (db) => db)).toEqual({ name: 'read' });
    expect(await router.quick(async (db) => db)).toEqual({ name: 'main' });
    expect(router.status()).toEqual([]);
  });

  test('a refused connection or a recovery conflict is a server failure; a bad read is not', () => {
    expect(isServerUnavailable({ code: 'ECONNREFUSED' })).toBe(true);
    expect(isServerUnavailable({ message: 'x', cause: { code: '40001' } })).toBe(true);
    expect(isServerUnavailable({ message: 'x', cause: { code: '57014' } })).toBe(false);
    expect(isServerUnavailable(new Error('syntax error'))).toBe(false);
  });
});
