/** The process roles the platform can run (`platform start --role`), in the order `all` starts them. */
export const PROCESS_ROLES = ['data', 'api', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

/** A running process role (data module, API, worker) as the start command manages it. */
export interface RoleHandle {
  name: string;
  url?: string;
  /** Its port serves the process's /metrics (the data module; the API's public port does not). */
  servesMetrics?: boolean;
  /** Readiness turns 503 so load balancers stop sending new work. */
  beginDrain(): void;
  /**
   * Finishes in-flight work and releases the role's resources. `graceMs` (SHUTDOWN_GRACE_SECONDS)
   * bounds the wait: past it, connections are cut and jobs abandoned to be retried elsewhere.
   */
  stop(graceMs?: number): Promise<void>;
  /** Throws while the role cannot do its work; feeds the readiness of a process without HTTP. */
  check?(): Promise<void>;
}
