/**
 * The one way tests wait: poll `check` until it holds, failing with `what` after `timeoutMs`.
 * Deadlines are generous (a loaded machine is slow); the poll interval is the only fixed pause.
 */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the poll interval
  }
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  await eventually(check, timeoutMs, what);
}

/** Polls `probe` until it yields a value (errors count as none yet) and returns that value. */
export async function valueOf<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  let value: T | undefined;
  await eventually(
    async () => (value = await probe().catch(() => undefined)) !== undefined,
    timeoutMs,
    what,
  );
  return value as T;
}
