import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpRequestsShed, httpShedAnswerDuration } from '../metrics.ts';

// The one place a shed request is recorded, whichever point shed it (the refusal before Koa,
// Koa's early refusal, a route's rate limit, a concurrency gate, the anonymous read budget): it
// is counted in http_requests_shed_total and its answer timed in
// http_shed_answer_duration_seconds, from the request's arrival at the HTTP server's request
// listener (stamped by server.ts) to the 429/503 handed to the socket (the response's 'finish').
// The goal "every shed request answered within 100 ms" is read from the platform's own clock
// here, not from a client's, whose own scheduling under a flood is part of what it would time.
// A request whose client left before its answer (reason client_gone) is counted, never timed:
// no answer is handed to a socket.

/** Why a request was shed: 429 for a client over its rate, 503 for a limit at capacity. */
export type ShedReason = 'rate_limited' | 'queue_full' | 'waited_too_long' | 'client_gone';

/** Records one shed request and times its answer (see `shedAnswers`). */
export type RecordShed = (req: IncomingMessage, res: ServerResponse) => void;

const arrivals = new WeakMap<IncomingMessage, bigint>();
const shedResponses = new WeakSet<ServerResponse>();

/** Stamps a request's arrival: the first thing the HTTP server's request listener does. */
export function markArrival(req: IncomingMessage): void {
  arrivals.set(req, process.hrtime.bigint());
}

/**
 * The recorder of one route group's shed requests for one reason. Every series of the group and
 * reason exists from the start (at 0), so its first refusal shows as a rate and a panel reading
 * it has samples before any flood.
 */
export function shedAnswers(group: string, reason: ShedReason): RecordShed {
  const labels = { route_group: group, reason };
  const shed = httpRequestsShed.labels(labels);
  shed.inc(0);
  httpShedAnswerDuration.zero(labels);
  const duration = httpShedAnswerDuration.labels(labels);
  return function recordShed(req, res) {
    shed.inc();
    shedResponses.add(res);
    // A request that did not come through server.ts (no stamp) is timed from here.
    const arrived = arrivals.get(req) ?? process.hrtime.bigint();
    const observe = () => duration.observe(Number(process.hrtime.bigint() - arrived) / 1e9);
    if (res.writableFinished) observe();
    else res.once('finish', observe);
  };
}

/** The recorders of a route group for every reason a concurrency limit sheds for. */
export function gateShedAnswers(group: string): Record<GateShedReason, RecordShed> {
  return {
    queue_full: shedAnswers(group, 'queue_full'),
    waited_too_long: shedAnswers(group, 'waited_too_long'),
    client_gone: shedAnswers(group, 'client_gone'),
  };
}

export type GateShedReason = Exclude<ShedReason, 'rate_limited'>;

/**
 * Whether a response is a shed answer: deliberate back-pressure, counted and timed above, not a
 * failure to log as an error (a flood must not become a flood of error lines with stacks).
 */
export function isShedAnswer(res: ServerResponse): boolean {
  return shedResponses.has(res);
}
