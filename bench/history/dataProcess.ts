import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { PLATFORM_BIN } from '../../test/support/cli.ts';

const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

// The data module under measurement runs as in production: its own process, started by the
// `platform` command, so the benchmark's own allocations and queries never share its heap or
// event loop.

export interface DataProcess {
  url: string;
  /** Resident memory of the data module's process now, in MB (Linux /proc). */
  rssMb(): number;
  /** CPU time the data module's process has used so far (user + system), in ms (Linux /proc). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/**
 * Starts the data module of this tree, or of another checkout given its `platform` command,
 * with `env` over the benchmark's own settings.
 */
export async function startDataProcess(
  databaseUrl: string,
  platformBin = PLATFORM_BIN,
  env: Record<string, string> = {},
): Promise<DataProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [platformBin, 'start', '--role', 'data', '--platform.load.currency=false'],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        HOST: '127.0.0.1',
        DATA_PORT: String(port),
        LOG_LEVEL: 'warn',
        HISTORY_MAX_POINTS: '50000',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 200) {
    if (child.exitCode !== null) throw new Error('the data module exited at start');
    if (waited > 60_000) throw new Error('the data module did not become ready within 60 s');
    const ready = await fetch(`${url}/health/ready`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    await sleep(200);
  }
  return {
    url,
    cpuMs: () => {
      // Fields 14 and 15 of /proc/<pid>/stat (utime, stime), counted after the command's ')'.
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
    },
    rssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
