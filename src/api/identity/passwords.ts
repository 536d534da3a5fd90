import { availableParallelism } from 'node:os';
import argon2 from 'argon2';
import { ConcurrencyGate } from '../../shared/concurrencyGate.ts';

// argon2id at the OWASP/ASVS minimum of m=19 MiB, t=2, p=1 (≈60 ms per hash on our machines).
// Each hash holds 19 MiB, so at most one per core runs at once: a flood of logins queues up
// instead of exhausting memory.
export const ARGON2_OPTIONS = {
  type: argon2.argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

const hashing = new ConcurrencyGate({ limit: Math.max(1, availableParallelism()) });

export function hashPassword(password: string): Promise<string> {
  return hashing.run(() => argon2.hash(password, ARGON2_OPTIONS));
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies a password against a stored hash. Without a stored hash (unknown account) it verifies
 * against a dummy hash anyway, so the answer takes as long either way and reveals nothing.
 */
export async function verifyPassword(storedHash: string | undefined, password: string) {
  if (storedHash === undefined) {
    dummyHash ??= hashPassword('not a real password; evens out the timing of unknown accounts');
    const hash = await dummyHash;
    await hashing.run(() => argon2.verify(hash, password));
    return { valid: false, needsRehash: false };
  }
  const valid = await hashing.run(() => argon2.verify(storedHash, password));
  return { valid, needsRehash: valid && argon2.needsRehash(storedHash, ARGON2_OPTIONS) };
}
