import type { Config } from './config.ts';
import type { DatabasePool } from './db/pool.ts';

/** One line of `platform doctor`: what was checked, what was found, and how to fix a failure. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

export interface DoctorContext {
  pool: DatabasePool;
  config: Config;
}

/** A module's contribution to `platform doctor` (runs once the database is reachable and migrated). */
export type DoctorCheck = (ctx: DoctorContext) => Promise<Check[]>;
