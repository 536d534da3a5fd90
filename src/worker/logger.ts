import { Logger as WorkerLogger, type LogLevel } from 'graphile-worker';
import type { Logger } from '../shared/logger.ts';

const LEVELS: Record<LogLevel, 'error' | 'warn' | 'info' | 'debug'> = {
  error: 'error',
  warning: 'warn',
  info: 'info',
  debug: 'debug',
};

/** graphile-worker's logger, writing through the platform's pino logger. */
export function workerLogger(logger: Logger): WorkerLogger {
  return new WorkerLogger((scope) => {
    const child = logger.child({ component: 'worker', ...scope });
    return (level, message, meta) => {
      // "Completed task … with success" for every job would flood the log (a harvest every
      // few seconds); failures keep their level.
      const routine = level === 'info' && meta?.success === true;
      child[routine ? 'debug' : LEVELS[level]](meta ?? {}, message);
    };
  });
}
