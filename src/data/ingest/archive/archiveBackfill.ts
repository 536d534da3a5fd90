import { keptConnection, type Connect } from '../connection.ts';
import type { BinanceKlineClient } from '../exchange/binanceKlines.ts';
import { importExchangeSlice, planSlices, sliceKey } from '../exchange/exchangeBackfill.ts';
import { intervalMs } from '../exchange/intervals.ts';
import { klineZipBufferRows } from '../files.ts';
import { loadUnit } from '../loader.ts';
import { FileFormatError } from '../readers/lineParsers.ts';
import type { UnitResult } from '../types.ts';
import { completedUnitKeys } from '../unitStore.ts';
import {
  archivePath,
  ArchiveChecksumError,
  type BinanceArchiveClient,
  type DownloadedArchive,
} from './archiveClient.ts';
import {
  fallbackParts,
  planArchiveParts,
  type ArchivePart,
  type ArchivePeriodPart,
} from './archivePlan.ts';

// `backfill --source binance-archive` for one currency: the range is cut into monthly and daily
// archives and REST ranges (archivePlan.ts); each archive is downloaded, checked against its
// .CHECKSUM and loaded as one unit (one transaction with its completion record, keyed by the
// archive's path), so a rerun skips it without downloading it again and a killed run loses only
// the archive in flight. The next archive downloads while the current one loads.

export interface ArchiveJob {
  code: string;
  symbol: string;
  interval: string;
  fromMs: number;
  toMs: number;
  nowMs: number;
  force: boolean;
  /**
   * Newest part first (--prepend): a killed run then leaves no hole between what it loaded and
   * the stored history the next run extends backwards from.
   */
  newestFirst?: boolean;
  /**
   * One archive at a time, in order (--since-last, --prepend: the next run's range follows from
   * what is stored, so a killed run must leave no hole). Otherwise two load at once, so one's
   * look-ups, commit and download overlap the other's COPY; a rerun of a fixed range fills
   * whatever a killed run left.
   */
  sequential?: boolean;
}

/** Archives loading at once when order does not matter (each on its own connection). */
const PARALLEL_LOADS = 2;

export interface ArchiveClients {
  connect: Connect;
  archives: BinanceArchiveClient;
  rest: BinanceKlineClient;
}

export interface ArchiveOutcome {
  read: number;
  inserted: number;
  duplicates: number;
  rejected: number;
  archives: {
    monthly: number;
    daily: number;
    /** Recorded as loaded by an earlier run: not downloaded again. */
    skipped: number;
    /** Not published (404): fetched as days, or from REST, instead. */
    missing: number;
    /** Checksum mismatch or damaged zip: nothing loaded from them; a rerun tries them again. */
    refused: number;
  };
  restSlices: number;
  restSlicesSkipped: number;
  /** What went wrong with single archives or slices; the others loaded. */
  problems: string[];
}

/** Progress in candles of the range (work) and rows read. */
export type ArchiveProgress = (work: number, rows: number) => void;

export const archiveUnitKey = (path: string) => `archive:binance:${path}`;

export async function backfillFromArchives(
  clients: ArchiveClients,
  job: ArchiveJob,
  progress: ArchiveProgress,
): Promise<ArchiveOutcome> {
  const outcome: ArchiveOutcome = {
    read: 0,
    inserted: 0,
    duplicates: 0,
    rejected: 0,
    archives: { monthly: 0, daily: 0, skipped: 0, missing: 0, refused: 0 },
    restSlices: 0,
    restSlicesSkipped: 0,
    problems: [],
  };
  const step = intervalMs(job.interval);
  const candlesOf = (part: ArchivePart) => Math.round((part.toMs - part.fromMs) / step);
  const pathOf = (part: ArchivePeriodPart) => archivePath(job.symbol, job.interval, part);
  const queue = inOrder(job, planArchiveParts(job.fromMs, job.toMs, job.nowMs));
  const covering = (part: ArchivePart) => coveringKeys(job, part, pathOf);
  // Looked up once: the keys of what may replace a missing archive are among them.
  const done = job.force
    ? new Set<string>()
    : await recordedKeys(
        clients.connect,
        queue.flatMap((p) => covering(p).all),
      );
  // Fixed for the run (a rerun's business is what earlier runs recorded), so asked once a part.
  const pending = new Map<ArchivePart, boolean>();
  const isPending = (part: ArchivePart): part is ArchivePeriodPart => {
    if (part.kind === 'rest') return false;
    let answer = pending.get(part);
    if (answer === undefined) pending.set(part, (answer = !covering(part).isDone(done)));
    return answer;
  };

  const downloads = new Map<ArchivePeriodPart, Promise<DownloadedArchive | null>>();
  const download = (part: ArchivePeriodPart) => {
    let pending = downloads.get(part);
    if (!pending) {
      pending = clients.archives.download(pathOf(part));
      pending.catch(() => {}); // awaited when its turn comes; a run that stops first drops it
      downloads.set(part, pending);
    }
    return pending;
  };

  const sequential = job.sequential || job.newestFirst;
  let failure: { error: unknown } | undefined;
  const work = async (connect: Connect) => {
    while (queue.length > 0 && !failure) {
      const part = queue.shift() as ArchivePart;
      if (part.kind === 'rest') {
        await loadFromRest(clients, job, part, outcome, progress);
        continue;
      }
      if (!isPending(part)) {
        outcome.archives.skipped++;
        progress(candlesOf(part), 0);
        continue;
      }
      const current = download(part);
      // One at a time, the next archive downloads while this one loads.
      const next = sequential ? queue.find(isPending) : undefined;
      if (next) void download(next);
      let archive: DownloadedArchive | null;
      try {
        archive = await current;
      } catch (error) {
        if (!(error instanceof ArchiveChecksumError)) throw error;
        refuse(outcome, error.message);
        progress(candlesOf(part), 0);
        continue;
      } finally {
        downloads.delete(part);
      }
      if (!archive) {
        outcome.archives.missing++;
        queue.unshift(...(await partsInstead(clients, job, part, queue, progress, candlesOf)));
        continue;
      }
      await loadArchive(connect, job, part, archive, outcome, progress, candlesOf(part));
    }
  };
  const worker = async () => {
    // Each load keeps its connection from one archive to the next.
    const session = keptConnection(clients.connect);
    try {
      await work(session.connect);
    } catch (error) {
      // The other loads finish their archive (each commits whole or not at all), then stop.
      failure ??= { error };
    } finally {
      await session.close();
    }
  };
  await Promise.all(Array.from({ length: sequential ? 1 : PARALLEL_LOADS }, worker));
  if (failure) throw failure.error;
  return outcome;
}

/**
 * The completion records that make an archive needless: its own, or those of what replaced it in
 * an earlier run (a missing month's days, a missing day's REST slices), so a rerun does not even
 * ask for an archive whose period is recorded another way. REST parts are checked slice by slice
 * when they load.
 */
function coveringKeys(
  job: ArchiveJob,
  part: ArchivePart,
  pathOf: (part: ArchivePeriodPart) => string,
): { all: string[]; isDone: (done: Set<string>) => boolean } {
  if (part.kind === 'rest') {
    const keys = restSlicesOf(job, part).map(sliceKey);
    return { all: keys, isDone: (done) => keys.every((k) => done.has(k)) };
  }
  const own = archiveUnitKey(pathOf(part));
  const instead = fallbackParts(part).map((p) => coveringKeys(job, p, pathOf));
  return {
    all: [own, ...instead.flatMap((i) => i.all)],
    isDone: (done) => done.has(own) || instead.every((i) => i.isDone(done)),
  };
}

const restSlicesOf = (job: ArchiveJob, part: { fromMs: number; toMs: number }) =>
  planSlices({
    code: job.code,
    symbol: job.symbol,
    interval: job.interval,
    from: new Date(part.fromMs),
    to: new Date(part.toMs),
    source: 'binance',
  });

async function recordedKeys(connect: Connect, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const connection = await connect();
  try {
    return await completedUnitKeys(connection.client, keys);
  } finally {
    await connection.release();
  }
}

/**
 * What replaces a missing archive. A missing day comes from REST. A missing month is the current
 * month not yet published, or a month the pair did not trade in (before its listing, after a
 * delisting): one REST call finds the first candle from there on, so months and days without any
 * are dropped instead of being asked for one by one; the month's days from that candle's on are
 * fetched as daily archives.
 */
async function partsInstead(
  clients: ArchiveClients,
  job: ArchiveJob,
  part: ArchivePeriodPart,
  queue: ArchivePart[],
  progress: ArchiveProgress,
  candlesOf: (part: ArchivePart) => number,
): Promise<ArchivePart[]> {
  if (part.kind === 'daily') return fallbackParts(part);
  const first = await firstCandleMs(clients.rest, job, part.fromMs);
  const dayMs = 86_400_000;
  const from = first === null ? job.toMs : Math.floor(first / dayMs) * dayMs;
  // Oldest first, the queued parts that end before the first candle have nothing to load.
  while (!job.newestFirst && queue.length > 0 && (queue[0] as ArchivePart).toMs <= from) {
    progress(candlesOf(queue.shift() as ArchivePart), 0);
  }
  const days = fallbackParts(part).filter((day) => day.toMs > from);
  progress(candlesOf(part) - days.reduce((sum, day) => sum + candlesOf(day), 0), 0);
  return inOrder(job, days);
}

const inOrder = <T>(job: ArchiveJob, parts: T[]): T[] =>
  job.newestFirst ? parts.reverse() : parts;

/** The open time of the exchange's first candle at or after `fromMs` in the job's range. */
async function firstCandleMs(
  rest: BinanceKlineClient,
  job: ArchiveJob,
  fromMs: number,
): Promise<number | null> {
  const page = await rest.page(job.symbol, job.interval, fromMs, job.toMs - 1);
  const first = page[0]?.[0];
  return typeof first === 'number' ? first : null;
}

async function loadArchive(
  connect: Connect,
  job: ArchiveJob,
  part: ArchivePeriodPart,
  archive: DownloadedArchive,
  outcome: ArchiveOutcome,
  progress: ArchiveProgress,
  candles: number,
) {
  const connection = await connect();
  let broken: Error | undefined;
  let read = 0;
  try {
    const result = await loadUnit(
      connection.client,
      {
        key: archiveUnitKey(archive.path),
        kind: 'file',
        label: archive.name,
        source: 'binance',
        rows: () => klineZipBufferRows(archive.bytes, archive.name, job.code),
        // Inclusive bounds: the next period's first instant is not this archive's.
        expected: [{ code: job.code, from: new Date(part.fromMs), to: new Date(part.toMs - 1) }],
        contentSha256: () => archive.sha256,
      },
      {
        force: job.force,
        onProgress: (rows) => {
          read += rows;
          progress(rows, rows);
        },
      },
    );
    addResult(outcome, result);
    if (result.status === 'skipped') outcome.archives.skipped++;
    else if (result.status === 'loaded') outcome.archives[part.kind]++;
    else refuse(outcome, `${archive.name}: ${result.error ?? result.status}`);
  } catch (error) {
    if (!(error instanceof FileFormatError)) {
      broken = error as Error;
      throw error;
    }
    refuse(outcome, `${archive.name}: ${error.message}`);
  } finally {
    await connection.release(broken);
  }
  // Candles the archive does not hold (minutes without trades) still count as work done.
  progress(candles - read, 0);
}

async function loadFromRest(
  clients: ArchiveClients,
  job: ArchiveJob,
  part: ArchivePart,
  outcome: ArchiveOutcome,
  progress: ArchiveProgress,
) {
  for (const slice of inOrder(job, restSlicesOf(job, part))) {
    const result = await importExchangeSlice(clients.connect, clients.rest, slice, {
      force: job.force,
      onProgress: (work) => progress(work, 0),
    });
    progress(0, result.read);
    outcome.restSlices++;
    if (result.status === 'skipped') outcome.restSlicesSkipped++;
    addResult(outcome, result);
    if (result.status === 'failed' || result.status === 'rejected')
      outcome.problems.push(`${result.label}: ${result.error ?? result.status}`);
  }
}

function addResult(outcome: ArchiveOutcome, result: UnitResult) {
  outcome.read += result.read;
  outcome.inserted += result.inserted;
  outcome.duplicates += result.duplicates;
  outcome.rejected += result.rejected;
}

function refuse(outcome: ArchiveOutcome, message: string) {
  outcome.archives.refused++;
  outcome.problems.push(message);
}
