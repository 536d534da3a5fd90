import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PLATFORM_BIN = fileURLToPath(new URL('../../bin/platform.mjs', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `platform …` in a child process on this Node (24), as an operator would. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PLATFORM_BIN, ...args],
      { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Starts a long-running `platform …` and resolves once its output matches `ready`. */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
  { terminal = false }: { terminal?: boolean } = {},
): Promise<{ child: ChildProcessWithoutNullStreams; output: () => string }> {
  const fullEnv = { ...process.env, LOG_LEVEL: 'warn', ...env };
  const child = terminal
    ? spawnOnTerminal([process.execPath, PLATFORM_BIN, ...args], fullEnv)
    : spawn(process.execPath, [PLATFORM_BIN, ...args], { env: fullEnv });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`platform ${args.join(' ')} did not get ready:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      // A terminal ends lines with \r\n.
      output += chunk.toString().replaceAll('\r\n', '\n');
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`platform exited early with ${code}:\n${output}`));
    });
  });
}

/**
 * Runs a command with a pseudo-terminal as its stdin, stdout and stderr (util-linux `script`, in
 * Debian's essential packages), as when a person starts it in a shell. `script` itself answers
 * SIGTERM by killing its command after 2 s, so signals sent with `kill` go to the command itself;
 * `script -e` then exits with the command's exit code.
 */
function spawnOnTerminal(command: string[], env: NodeJS.ProcessEnv) {
  const quoted = command.map((part) => `'${part.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qefc', `exec ${quoted}`, '/dev/null'], { env });
  const signalScript = child.kill.bind(child);
  child.kill = (signal?: NodeJS.Signals | number) => {
    const inner = child.pid === undefined ? undefined : childPid(child.pid);
    if (inner === undefined) return signalScript(signal);
    process.kill(inner, signal);
    return true;
  };
  return child;
}

/** The process whose parent is `parent` (the command `script` runs), from /proc. */
function childPid(parent: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) return Number(entry);
    } catch {
      // The process ended while the list was read.
    }
  }
  return undefined;
}

export function waitForExit(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
