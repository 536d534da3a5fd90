// Runs one side of an ingestion benchmark and measures what it cost: wall time, and the CPU time
// of the command itself plus that of every database backend serving it. On a machine shared with
// other work the wall time depends on the load; the CPU time much less, so both are reported.
// The backends' CPU is read from /proc (clock ticks), which needs the database server on this
// host; elsewhere it is reported as unknown (null).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';

export interface Measured {
  seconds: number;
  stdout: string;
  /** CPU seconds of the command (user + system) and of its database backends; null if unknown. */
  cpu: number | null;
}

const TICKS_PER_SECOND = 100;

/** CPU ticks (user + system) of a process, or null once it is gone or not readable. */
function ticksOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** Runs `command` under /usr/bin/time while watching the backends of database `url`. */
export async function measured(
  url: string,
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<Measured> {
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  const backendTicks = new Map<number, number>();
  const own = await watcher.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const readable = ticksOf(own.rows[0]?.pid ?? -1) !== null;
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'cpu %U %S', command, ...args], {
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(options.input ?? '');
  let exitCode: number | null | undefined;
  child.on('exit', (code) => (exitCode = code));
  const closed = new Promise((resolve) => child.once('close', resolve));
  try {
    while (exitCode === undefined) {
      const { rows } = await watcher.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND backend_type = 'client backend'`,
      );
      for (const { pid } of rows) {
        const ticks = readable ? ticksOf(pid) : null;
        // A backend that ended since the query keeps its last reading.
        if (ticks !== null) backendTicks.set(pid, ticks);
      }
      await new Promise((resolve) => setTimeout(resolve, 20)); // the sampling interval
    }
  } finally {
    await watcher.end();
  }
  const seconds = (performance.now() - started) / 1000;
  await closed;
  if (exitCode !== 0) throw new Error(`${command} failed (${exitCode}): ${stderr}`);
  const times = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(stderr);
  const backends = [...backendTicks.values()].reduce((a, b) => a + b, 0) / TICKS_PER_SECOND;
  const cpu = times && readable ? Number(times[1]) + Number(times[2]) + backends : null;
  return { seconds, stdout, cpu };
}
