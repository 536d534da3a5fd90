import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
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
): Promise<{ child: ChildProcessWithoutNullStreams; output: () => string }> {
  const child = spawn(process.execPath, [PLATFORM_BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`platform ${args.join(' ')} did not get ready:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
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

export function waitForExit(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
