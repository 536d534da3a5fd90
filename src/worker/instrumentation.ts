import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { JobHelpers, Task, TaskList } from 'graphile-worker';
import { workerJobDuration, workerJobs } from '../shared/metrics.ts';

const tracer = trace.getTracer('market-data-platform/worker');

/**
 * Wraps every task so each job is timed, counted by outcome and traced (a span per job, current
 * while the task runs, so its queries and log lines carry the job's trace id). Tasks themselves
 * stay unaware of it.
 */
export function instrumentTaskList(tasks: TaskList): TaskList {
  const instrumented: TaskList = {};
  for (const [name, task] of Object.entries(tasks)) {
    if (task) instrumented[name] = instrumentTask(name, task);
  }
  return instrumented;
}

export function instrumentTask(name: string, task: Task): Task {
  return (payload: unknown, helpers: JobHelpers) =>
    tracer.startActiveSpan(
      `job ${name}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'job.task': name,
          'job.id': String(helpers.job.id),
          'job.attempt': helpers.job.attempts,
          'job.max_attempts': helpers.job.max_attempts,
        },
      },
      async (span) => {
        const stopTimer = workerJobDuration.startTimer({ task: name });
        try {
          const result = await task(payload, helpers);
          // A batch task hands back one promise per item; graphile-worker retries only the
          // items that failed, so the result goes back untouched and a failed item only counts.
          const failed = Array.isArray(result) ? await firstRejection(result) : undefined;
          if (failed) markFailed(span, name, failed.reason);
          else workerJobs.inc({ task: name, outcome: 'success' });
          return result;
        } catch (error) {
          markFailed(span, name, error);
          throw error;
        } finally {
          stopTimer();
          span.end();
        }
      },
    );
}

function markFailed(span: Span, task: string, error: unknown) {
  workerJobs.inc({ task, outcome: 'failure' });
  const exception = error instanceof Error ? error : new Error(String(error));
  span.recordException(exception);
  span.setStatus({ code: SpanStatusCode.ERROR, message: exception.message });
}

async function firstRejection(results: unknown[]): Promise<PromiseRejectedResult | undefined> {
  const settled = await Promise.allSettled(results);
  return settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
}
