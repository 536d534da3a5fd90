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

export const SESSION_SETTINGS: Readonly<Record<string, string>> = {
  client_connection_check_interval: '2s',
  tcp_keepalives_idle: '30',
  tcp_keepalives_interval: '10',
  tcp_keepalives_count: '3',
  DateStyle: 'ISO',
};

/** The settings as node-postgres's `options` startup parameter (`-c name=value …`). */
export const SESSION_OPTIONS = Object.entries(SESSION_SETTINGS)
  .map(([name, value]) => `-c ${name}=${value}`)
  .join(' ');
