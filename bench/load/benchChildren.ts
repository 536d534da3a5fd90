// The processes of a bench:load --flood round besides the platform: the attacker (floodClients.ts)
// and the probe (floodProbe.ts), each a Node child that prints one line when it starts and its
// tally as its last line; and what /proc tells of the platform and the kernel (Linux).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface BenchChild<T> {
  /** Resolves once the child has printed its first line (it is under way). */
  started: Promise<void>;
  /** Its last line, parsed; rejects when it fails. */
  tally: Promise<T>;
}

/** Runs `script` (in this folder) with `env` added to this process's environment. */
export function startChild<T>(
  node: string,
  script: string,
  env: Record<string, string>,
): BenchChild<T> {
  const child = spawn(node, [join(import.meta.dirname, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const output = (async () => {
    const read: string[] = [];
    for await (const line of lines) read.push(line);
    return read;
  })();
  let onStarted = () => {};
  const started = new Promise<void>((resolve) => (onStarted = resolve));
  lines.once('line', () => onStarted());
  const tally = (async () => {
    const [code] = (await once(child, 'exit')) as [number | null];
    const read = await output;
    onStarted();
    if (code !== 0 || read.length < 2) throw new Error(`${script} exited with ${code}`);
    return JSON.parse(read.at(-1)!) as T;
  })();
  return { started, tally };
}

// USER_HZ: 100 on every Linux build Node supports.
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system, all threads) a process has used so far, from /proc (Linux). */
export function cpuSecondsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/**
 * Connections the kernel dropped so far because a listening socket's accept queue was full
 * (TcpExt ListenOverflows, machine-wide: other processes' listeners count too).
 */
export function listenOverflows(): number {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const names = lines.find((line) => line.startsWith('TcpExt:'))!.split(' ');
    const values = lines.filter((line) => line.startsWith('TcpExt:'))[1]!.split(' ');
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return NaN;
  }
}

/**
 * Samples, every `everyMs`, how many connections wait in the accept queue of the listening
 * socket on 127.0.0.1:`port` (/proc/net/tcp: a listener's rx_queue is its accept queue): a
 * request's wait there comes before the HTTP server sees it, so no timing of the server's own
 * includes it. Returns the function that stops sampling and gives the largest queue seen and the
 * share of samples with any connection waiting.
 */
export function sampleAcceptQueue(port: number, everyMs = 100) {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let largest = 0;
  let samples = 0;
  let waiting = 0;
  const timer = setInterval(() => {
    try {
      for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
        const fields = line.trim().split(/\s+/);
        if (fields[1] !== local || fields[3] !== '0A') continue;
        const queued = Number.parseInt(fields[4]!.split(':')[1]!, 16);
        largest = Math.max(largest, queued);
        samples++;
        if (queued > 0) waiting++;
      }
    } catch {
      // not Linux: nothing sampled
    }
  }, everyMs);
  return () => {
    clearInterval(timer);
    return { largest, samples, waiting };
  };
}
