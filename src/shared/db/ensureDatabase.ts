import pg from 'pg';

/**
 * Creates the database named in `url` when it does not exist yet and the role may create it, so
 * a newcomer's `npm start` works against a fresh server.
 */
export async function ensureDatabase(url: string): Promise<'exists' | 'created'> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return 'exists';
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return 'exists';
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    } catch (error) {
      // Another process created it between our check and our CREATE.
      if ((error as { code?: string }).code !== '42P04') throw error;
      return 'exists';
    }
    return 'created';
  } finally {
    await client.end();
  }
}

/** PostgreSQL's invalid_catalog_name: the database named in the connection string does not exist. */
const NO_SUCH_DATABASE = '3D000';

/**
 * A connection to the database of `url`, which is created first only when the server says it is
 * missing: in the usual case that costs a short command one connection instead of a second one
 * to the maintenance database.
 */
export async function connectCreatingDatabase(
  url: string,
  settings: Omit<pg.ClientConfig, 'connectionString'> = {},
): Promise<pg.Client> {
  const open = async () => {
    const client = new pg.Client({ ...settings, connectionString: url });
    await client.connect();
    return client;
  };
  try {
    return await open();
  } catch (error) {
    if ((error as { code?: string }).code !== NO_SUCH_DATABASE) throw error;
  }
  await ensureDatabase(url);
  return open();
}
