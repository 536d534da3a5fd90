// What a token may be named and grant, apart from the store so that the CLI's --help can name
// them without loading the database client.

export const SCOPES = ['read', 'write'] as const;
export type Scope = (typeof SCOPES)[number];

/** What a token name may be; the table's CHECK constraint (sql/0004) says the same. */
export const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/;
