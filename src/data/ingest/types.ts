/** One price candle as the loaders carry it; a tick is a candle whose four prices are equal. */
export interface Candle {
  code: string;
  /** Microseconds since the Unix epoch (PostgreSQL's resolution; Binance's since 2025). */
  timeUs: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  /** 1-based line in its file (or index in a request body), for rejections found later. */
  line: number;
}

/** A row that was not loaded, with where it came from and why. */
export interface Rejection {
  /** File (or `file.zip:entry.csv`, or an exchange slice, or `request`). */
  file: string;
  /** 1-based line in the file, or item index for request bodies. */
  line: number;
  reason: string;
}

/** What a reader hands over per step: parsed candles, rows it could not parse, and progress. */
export interface ReadBatch {
  /** Where these rows come from (the label rejections carry). */
  file: string;
  candles: Candle[];
  rejections: Rejection[];
  /** Input bytes consumed since the previous batch (drives the progress bar's ETA). */
  bytes: number;
}

export type RowSource = () => AsyncIterable<ReadBatch>;

export type LoadPath = 'direct' | 'merge';

export type UnitStatus = 'loaded' | 'skipped' | 'rejected' | 'failed';

export interface UnitResult {
  label: string;
  status: UnitStatus;
  /** Data rows seen (header and blank lines excluded). */
  read: number;
  inserted: number;
  /** Rows already present (or repeated within the unit): existing rows win. */
  duplicates: number;
  rejected: number;
  /** The first rejected rows; `rejected` counts them all. */
  rejections: Rejection[];
  path?: LoadPath;
  /** Why a unit failed or was rejected as a whole. */
  error?: string;
}

/** How many rejected rows one unit keeps for reporting (all are counted). */
export const MAX_KEPT_REJECTIONS = 100;
