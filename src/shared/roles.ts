/** A running process role (data module, API, worker) as the start command manages it. */
export interface RoleHandle {
  name: string;
  url?: string;
  /** Readiness turns 503 so load balancers stop sending new work. */
  beginDrain(): void;
  /** Finishes in-flight work (bounded) and releases the role's resources. */
  stop(): Promise<void>;
}
