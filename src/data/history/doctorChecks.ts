import type { Check, DoctorContext } from '../../shared/diagnostics.ts';
import { LEVELS, levelNamed } from './levels.ts';
import { CHUNKS_PER_RUN, readReorderBacklog } from './reorderChunks.ts';
import { readRollupStatus, type RollupStatus } from './rollupState.ts';

// How far behind each level may fall before `platform doctor` complains. A level is materialised
// up to its last complete bucket (up to one width behind), after a settle time or policy end
// offset (up to one more width for continuous aggregates), on a schedule; three widths plus a
// quarter of an hour covers all of that with room for a slow run.
const SLACK_SECONDS = 15 * 60;
/** The levels as built, each after the one it is built from: raw → 5m, 15m → 1h … */
const CHAIN = LEVELS.map((level) => `${level.below ?? 'raw'} → ${level.name}`).join(', ');
const allowedLag = (widthSeconds: number) => 3 * widthSeconds + SLACK_SECONDS;
/** reorder_chunks runs hourly: a backlog with no chunk reordered for longer means it is not. */
const REORDER_SILENCE_SECONDS = 2 * 3600;

/** Rollup mode, each level's watermark and lag, and backfills waiting (for `platform doctor`). */
export async function checkRollups({ pool }: Pick<DoctorContext, 'pool'>): Promise<Check[]> {
  let status: RollupStatus;
  try {
    status = await readRollupStatus(pool);
  } catch (error) {
    return [
      {
        name: 'rollups',
        ok: false,
        detail: (error as Error).message,
        fix: 'run `platform migrate`',
      },
    ];
  }
  const fix =
    status.mode === 'tables'
      ? 'start the worker (`platform start --role worker`): its refresh_rollups job keeps them fresh'
      : 'check the continuous-aggregate policies in timescaledb_information.jobs';
  const checks: Check[] = [
    {
      name: 'rollup mode',
      ok: true,
      detail:
        status.mode === 'continuous'
          ? `continuous aggregates (Timescale edition): ${CHAIN}, real-time`
          : `rollup tables (Apache edition): ${CHAIN}, refreshed by the worker`,
    },
  ];
  for (const level of status.levels) {
    const width = levelNamed(level.level).seconds;
    const allowed = allowedLag(width);
    // Nothing materialised yet is no fault (a fresh install, a worker about to run): answers
    // come from finer data meanwhile, exactly, only slower.
    const ok = level.lagSeconds === null || level.lagSeconds <= allowed;
    checks.push({
      name: `rollup ${level.level}`,
      ok,
      detail:
        level.lagSeconds === null
          ? status.hasData
            ? 'nothing materialised yet (answers come from finer data until it is)'
            : 'no prices stored yet'
          : `materialised up to ${level.watermark} (lag ${level.lagSeconds} s, allowed ${allowed} s)`,
      fix,
    });
  }
  checks.push({
    name: 'backfills',
    ok: (status.oldestInvalidationSeconds ?? 0) <= SLACK_SECONDS,
    detail: status.pendingInvalidations
      ? `${status.pendingInvalidations} backfilled ranges waiting for recomputation (oldest ${status.oldestInvalidationSeconds} s)`
      : 'no backfilled ranges waiting',
    fix,
  });
  checks.push(await chunkOrderCheck(pool));
  return checks;
}

/** Closed chunks still in write order, which the worker's reorder_chunks takes hour by hour. */
async function chunkOrderCheck(pool: DoctorContext['pool']): Promise<Check> {
  const { waiting, lastReorderedAt } = await readReorderBacklog(pool);
  const silentSeconds = lastReorderedAt ? (Date.now() - lastReorderedAt.getTime()) / 1000 : null;
  const last = lastReorderedAt
    ? `last one ${Math.round(silentSeconds!)} s ago`
    : 'none reordered yet';
  return {
    name: 'chunk order',
    ok: waiting === 0 || (silentSeconds !== null && silentSeconds <= REORDER_SILENCE_SECONDS),
    detail:
      waiting === 0
        ? 'every closed chunk is in currency order'
        : `${waiting} closed chunk${waiting === 1 ? '' : 's'} in write order (${last}); ` +
          `reorder_chunks takes ${CHUNKS_PER_RUN} an hour`,
    fix: 'start the worker (`platform start --role worker`): its hourly reorder_chunks job',
  };
}
