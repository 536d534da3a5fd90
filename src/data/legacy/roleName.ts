/**
 * Names of the old analysis service's roles: plain lower-case identifiers, so they need no quoting
 * in connection strings. Apart from role.ts so that the CLI checks an argument without loading the
 * database client.
 */
export const LEGACY_ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
