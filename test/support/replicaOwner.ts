import { readFileSync } from 'node:fs';

// Which test run a streaming replica belongs to: the run's jest main process (the one that ran
// the global setup), named by its pid and its start time in the kernel's clock ticks, so a pid
// the system has handed to another process since does not pass for the run.

/** Set by the global setup: the pid of the jest process that owns this run's replica. */
const OWNER_ENV = 'TEST_RUN_OWNER_PID';

export interface RunOwner {
  pid: number;
  /** /proc/<pid>/stat's start time; null where /proc is not there. */
  started: string | null;
}

/** Global setup: this process owns what the run's test processes make. */
export function claimRunOwnership(): void {
  process.env[OWNER_ENV] = String(process.pid);
}

/** The owner of this run (the jest main process), or this process outside jest's setup. */
export function runOwner(): RunOwner {
  return processOwner(Number(process.env[OWNER_ENV]) || process.pid);
}

/** Process `pid` as the owner of a replica. */
export function processOwner(pid: number): RunOwner {
  return { pid, started: startTime(pid) };
}

/** Whether the owner still runs: its pid is alive and started when it did. */
export function ownerAlive(owner: RunOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: a process of another user has the pid, which is alive.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (owner.started === null) return true;
  const started = startTime(owner.pid);
  return started === null || started === owner.started;
}

function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (in parentheses, which may hold spaces): state is the
    // third field of the line, starttime the twenty-second.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** A slot name carrying its owner, so slots left without their replica can be judged too. */
export function ownedSlotName(prefix: string, owner: RunOwner, port: number): string {
  return `${prefix}run${owner.pid}_${owner.started ?? 0}_${port}`;
}

/** The owner a slot name carries; undefined for names of another form. */
export function slotOwner(prefix: string, slot: string): RunOwner | undefined {
  const match = new RegExp(`^${prefix}run(\\d+)_(\\d+)_\\d+$`).exec(slot);
  if (!match) return undefined;
  return { pid: Number(match[1]), started: match[2] === '0' ? null : match[2]! };
}
