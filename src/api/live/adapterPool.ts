import type pg from 'pg';

/**
 * The pool handed to @socket.io/postgres-adapter. The adapter holds one client for LISTEN and
 * acquires it asynchronously, also after its own close() (a reconnection timer): this wrapper
 * remembers the clients it hands out and releases them at close, and hands out none afterwards,
 * so the pool can end and nothing keeps the process alive.
 */
export function closableAdapterPool(pool: pg.Pool) {
  const held = new Set<pg.PoolClient>();
  let closed = false;
  const wrapper = {
    async connect(): Promise<pg.PoolClient> {
      if (closed) return new Promise<never>(() => {});
      const client = await pool.connect();
      if (closed) {
        client.release(true);
        return new Promise<never>(() => {});
      }
      held.add(client);
      const release = client.release.bind(client);
      client.release = (destroy?: boolean | Error) => {
        held.delete(client);
        return release(destroy);
      };
      return client;
    },
    query: (text: string, values?: unknown[]) => pool.query(text, values),
    on: (event: string, listener: (...args: unknown[]) => void) => {
      pool.on(event as 'error', listener);
      return wrapper;
    },
    async end(): Promise<void> {
      closed = true;
      for (const client of held) client.release(true);
      held.clear();
      await pool.end();
    },
  };
  return wrapper;
}
