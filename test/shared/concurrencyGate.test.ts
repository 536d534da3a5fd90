import { describe, expect, test } from '@jest/globals';
import { ConcurrencyGate, type GateRefusal } from '../../src/shared/concurrencyGate.ts';
import { OverloadedError } from '../../src/shared/errors.ts';

// The one concurrency gate of the platform (password hashing, picture decoding, the data
// module's route gates): places handed over first come, first served, and a wait given up on
// (client gone, waited too long) leaving the queue at once.

function smallGate(maxWaiting = 1) {
  const changes: Array<[number, number]> = [];
  const gate = new ConcurrencyGate({
    limit: 1,
    maxWaiting,
    retryAfterSeconds: 2,
    busyMessage: (reason: GateRefusal) => `busy (${reason})`,
    onChange: (running, waiting) => changes.push([running, waiting]),
  });
  return { gate, changes };
}

async function refusal(promise: Promise<unknown>): Promise<OverloadedError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(OverloadedError);
  return error as OverloadedError;
}

describe('the concurrency gate', () => {
  test('a release hands the place to the next waiter; releasing twice does nothing', async () => {
    const { gate: g, changes } = smallGate();
    const first = await g.acquire();
    let secondAdmitted = false;
    const second = g.acquire().then((release) => {
      secondAdmitted = true;
      return release;
    });
    expect([g.active, g.queued]).toEqual([1, 1]);
    expect(secondAdmitted).toBe(false);

    first();
    const releaseSecond = await second;
    expect(secondAdmitted).toBe(true);
    expect([g.active, g.queued]).toEqual([1, 0]);

    first(); // idempotent: neither frees the second's place nor goes below zero
    expect([g.active, g.queued]).toEqual([1, 0]);
    releaseSecond();
    expect([g.active, g.queued]).toEqual([0, 0]);
    expect(changes.at(-1)).toEqual([0, 0]);
  });

  test('a full queue refuses at once with 503, Retry-After and the reason', async () => {
    const { gate: g } = smallGate();
    const release = await g.acquire();
    const waiting = g.acquire();
    const error = await refusal(g.acquire());
    expect(error.status).toBe(503);
    expect(error.code).toBe('overloaded');
    expect(error.headers['Retry-After']).toBe('2');
    expect(error.message).toBe('busy (queue full)');
    release();
    (await waiting)();
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  test('an abort while waiting refuses with 503 and frees the queue place', async () => {
    const { gate: g, changes } = smallGate();
    const release = await g.acquire();
    const client = new AbortController();
    const waiting = g.acquire({ signal: client.signal });
    expect(g.queued).toBe(1);

    client.abort();
    const error = await refusal(waiting);
    expect(error.status).toBe(503);
    expect(error.message).toBe('busy (client gone)');
    expect([g.active, g.queued]).toEqual([1, 0]);
    expect(changes.at(-1)).toEqual([1, 0]);

    // The freed queue place takes the next waiter, who gets the place on release.
    const next = g.acquire();
    expect(g.queued).toBe(1);
    release();
    (await next)();
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  test('a signal aborted already is refused without queueing', async () => {
    const { gate: g } = smallGate();
    const error = await refusal(g.acquire({ signal: AbortSignal.abort() }));
    expect(error.message).toBe('busy (client gone)');
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  test('a wait past maxWaitMs is refused with 503 and frees the queue place', async () => {
    const { gate: g } = smallGate();
    const release = await g.acquire();
    const error = await refusal(g.acquire({ maxWaitMs: 20 }));
    expect(error.status).toBe(503);
    expect(error.message).toBe('busy (waited too long)');
    expect([g.active, g.queued]).toEqual([1, 0]);
    release();
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  test('an admitted waiter is not refused later by its signal or time limit', async () => {
    const { gate: g } = smallGate();
    const release = await g.acquire();
    const client = new AbortController();
    const waiting = g.acquire({ signal: client.signal, maxWaitMs: 60_000 });
    release();
    const releaseWaiter = await waiting;
    client.abort();
    expect([g.active, g.queued]).toEqual([1, 0]);
    releaseWaiter();
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  test('run holds a place for its work and gives it back when the work fails', async () => {
    const { gate: g } = smallGate(0);
    await expect(g.run(async () => expect(g.active).toBe(1))).resolves.toBeUndefined();
    await expect(g.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect([g.active, g.queued]).toEqual([0, 0]);
  });
});
