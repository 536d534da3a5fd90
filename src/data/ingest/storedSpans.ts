import type pg from 'pg';

// Which rows of a load cannot collide with stored ones, decided before the first row is read.
//
// Per currency, one look at the primary key gives the earliest and latest stored row (inside the
// window a unit announces, when it does). A row outside that span cannot meet a stored row, so it
// is written without a conflict check; a row inside it may, and goes through the staging merge.
// The look is taken at the start of the unit's transaction: a row another writer stores
// meanwhile makes the unchecked write fail with a unique violation, and the loader then redoes
// the unit with every row checked (loader.ts). So the shortcut can cost a retry, never a row.

interface Span {
  /** The window looked at, µs since the epoch (±Infinity when the unit announced none). */
  windowFromUs: number;
  windowToUs: number;
  /** Earliest and latest stored row inside the window; null when it holds none. */
  firstUs: number | null;
  lastUs: number | null;
}

/** What a unit says it will write, when it knows before reading (file names, exchange slices). */
export interface ExpectedRange {
  code: string;
  from: Date;
  to: Date;
}

export class StoredSpans {
  private readonly spans: Map<string, Span>;

  private constructor(spans: Map<string, Span>) {
    this.spans = spans;
  }

  /** No knowledge: every row is checked against stored ones (the merge of a retried unit). */
  static unknown(): StoredSpans {
    return new StoredSpans(new Map());
  }

  /**
   * True when no stored row can share this row's key: the row lies inside the looked-at window
   * and outside the stored span. Codes that were not looked at are never certain.
   */
  isCertainlyNew(code: string, timeUs: number): boolean {
    const span = this.spans.get(code);
    if (!span || timeUs < span.windowFromUs || timeUs > span.windowToUs) return false;
    if (span.firstUs === null || span.lastUs === null) return true;
    return timeUs < span.firstUs || timeUs > span.lastUs;
  }

  /**
   * Looks up the stored span of each announced code inside its window, or of every listed
   * currency over all time when the unit announced nothing (a generic CSV names its codes only
   * row by row). Two index probes per code and chunk, newest or oldest first: milliseconds.
   *
   * The windows come in as arrays, so the planner cannot tell which chunks they fall in and
   * would plan both probes over every chunk of the hypertable (~170 ms with 200 chunks, paid
   * again by each archive of a long backfill). Their overall bounds are therefore repeated as
   * plain parameters, which the planner sees as values: chunks outside them are left out.
   */
  static async read(client: pg.ClientBase, expected?: ExpectedRange[]): Promise<StoredSpans> {
    const windows = expected?.length
      ? expected.map((e) => ({ code: e.code, from: e.from.toISOString(), to: e.to.toISOString() }))
      : (await client.query<{ code: string }>('SELECT code FROM currencies')).rows.map((r) => ({
          code: r.code,
          from: '-infinity',
          to: 'infinity',
        }));
    if (windows.length === 0) return StoredSpans.unknown();
    const found = await client.query<{
      code: string;
      first_us: string | null;
      last_us: string | null;
    }>(
      `SELECT r.code,
         (SELECT (extract(epoch FROM p.time) * 1000000)::bigint FROM price_observations p
          WHERE p.currency_code = r.code AND p.time >= r.t0 AND p.time <= r.t1
            AND p.time >= $4::timestamptz AND p.time <= $5::timestamptz
          ORDER BY p.time LIMIT 1) AS first_us,
         (SELECT (extract(epoch FROM p.time) * 1000000)::bigint FROM price_observations p
          WHERE p.currency_code = r.code AND p.time >= r.t0 AND p.time <= r.t1
            AND p.time >= $4::timestamptz AND p.time <= $5::timestamptz
          ORDER BY p.time DESC LIMIT 1) AS last_us
       FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY AS r(code, t0, t1, i)
       ORDER BY r.i`,
      [
        windows.map((w) => w.code),
        windows.map((w) => w.from),
        windows.map((w) => w.to),
        earliest(windows.map((w) => w.from)),
        latest(windows.map((w) => w.to)),
      ],
    );
    const spans = new Map<string, Span>();
    found.rows.forEach((row, i) => {
      const window = windows[i] as (typeof windows)[number];
      const next: Span = {
        windowFromUs: window.from === '-infinity' ? -Infinity : Date.parse(window.from) * 1000,
        windowToUs: window.to === 'infinity' ? Infinity : Date.parse(window.to) * 1000,
        firstUs: row.first_us === null ? null : Number(row.first_us),
        lastUs: row.last_us === null ? null : Number(row.last_us),
      };
      // A code announced twice (two windows) is only trusted inside one window: keep it unknown.
      spans.set(row.code, spans.has(row.code) ? UNKNOWN_SPAN : next);
    });
    return new StoredSpans(spans);
  }
}

/** The earliest of ISO instants or '-infinity'. */
function earliest(instants: string[]): string {
  if (instants.includes('-infinity')) return '-infinity';
  return instants.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

/** The latest of ISO instants or 'infinity'. */
function latest(instants: string[]): string {
  if (instants.includes('infinity')) return 'infinity';
  return instants.reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a));
}

/** A span that makes no row certain: an empty window. */
const UNKNOWN_SPAN: Span = {
  windowFromUs: Infinity,
  windowToUs: -Infinity,
  firstUs: null,
  lastUs: null,
};
