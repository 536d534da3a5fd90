import { httpRequestsShed, httpShedAnswerDuration } from '../../src/shared/metrics.ts';
import { until } from './wait.ts';

/** One route group's shed requests for one reason, as this process's metrics hold them. */
export interface ShedTally {
  /** http_requests_shed_total. */
  shed: number;
  /** Answers timed in http_shed_answer_duration_seconds, and their seconds in all. */
  timed: number;
  seconds: number;
  /** Whether the series exist at all (they are created at 0 with their limit). */
  declared: boolean;
}

export async function shedTally(group: string, reason: string): Promise<ShedTally> {
  const ours = (v: { labels: Record<string, unknown> }) =>
    v.labels.route_group === group && v.labels.reason === reason;
  const counted = (await httpRequestsShed.get()).values.find(ours);
  const timing = (await httpShedAnswerDuration.get()).values.filter(ours);
  const value = (suffix: string) =>
    timing.find((v) => v.metricName === `http_shed_answer_duration_seconds_${suffix}`)?.value;
  return {
    shed: counted?.value ?? 0,
    timed: value('count') ?? 0,
    seconds: value('sum') ?? 0,
    declared: counted !== undefined && value('count') !== undefined,
  };
}

/**
 * Waits until `more` shed requests after `before` are counted and every one of them timed (an
 * answer is timed when the server has handed it to the socket, which may come a moment after the
 * client read it), then returns the tally.
 */
export async function untilShedAndTimed(
  group: string,
  reason: string,
  before: ShedTally,
  more: number,
): Promise<ShedTally> {
  let now = before;
  await until(
    async () => {
      now = await shedTally(group, reason);
      return now.shed >= before.shed + more && now.timed >= before.timed + more;
    },
    30_000,
    `${more} ${group} ${reason} shed answers counted and timed`,
  );
  return now;
}
