// Settings of every database session the platform opens: pooled (Slonik, node-postgres, hence
// graphile-worker) and dedicated (ingest loads, LISTEN connections, tickers). The one place
// they are decided.
//
// client_connection_check_interval (PostgreSQL 14+): during a long statement the server checks
// every 2 s that its client is still connected and ends the statement when it is gone. Without
// it a statement whose client died (a `platform backfill` killed with SIGKILL in its merge, a
// service killed mid-read) runs on to its end (a minute and more) holding locks and a core.
// TCP keepalives: an idle peer that vanished without closing (host gone) is noticed in about a
// minute rather than the kernel's two hours.
// DateStyle ISO: history answers write bucket stamps from a timestamp's own text (jsonText.ts),
// which reads `YYYY-MM-DD HH:MI:SS` only in this style; a server or role configured otherwise
// would change the bytes of every answer.
// random_page_cost 1.1: the platform's working set (recent chunks, every index) is in memory or
// on SSD, where a random page costs about a sequential one; PostgreSQL's default of 4 is for
// spinning disks. At 4 the planner read one currency's minutes from the newest raw chunk, whose
// heap holds every currency of a minute together, through the index on time, filtering out the
// other currencies' rows: 24 h at 1 min for 50 currencies 11.5 → 5.2 ms p50 on a first request
// (test/data/levelReads.test.ts).

export const SESSION_SETTINGS: Readonly<Record<string, string>> = {
  client_connection_check_interval: '2s',
  tcp_keepalives_idle: '30',
  tcp_keepalives_interval: '10',
  tcp_keepalives_count: '3',
  DateStyle: 'ISO',
  random_page_cost: '1.1',
};

/** The settings as node-postgres's `options` startup parameter (`-c name=value …`). */
export const SESSION_OPTIONS = Object.entries(SESSION_SETTINGS)
  .map(([name, value]) => `-c ${name}=${value}`)
  .join(' ');
