import type Router from '@koa/router';
import type { Context } from 'koa';

export type ReadinessCheck = () => Promise<void>;
/** Facts shown beside the checks (rollup mode and lag, …) that never make the service unready. */
export type ReadinessDetail = () => Promise<unknown>;

/**
 * Liveness answers while the event loop does; readiness runs the service's checks (database
 * reachable, migrations applied, …) and turns 503 as soon as shutdown begins.
 */
export class Readiness {
  private draining = false;
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly details = new Map<string, ReadinessDetail>();

  addCheck(name: string, check: ReadinessCheck) {
    this.checks.set(name, check);
  }

  addDetail(name: string, detail: ReadinessDetail) {
    this.details.set(name, detail);
  }

  async describe(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    await Promise.all(
      [...this.details].map(async ([name, detail]) => {
        try {
          out[name] = await withTimeout(detail(), 2000);
        } catch (error) {
          out[name] = { error: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    return out;
  }

  startDraining() {
    this.draining = true;
  }

  get isDraining() {
    return this.draining;
  }

  async evaluate(): Promise<{ ready: boolean; checks: Record<string, string> }> {
    const checks: Record<string, string> = {};
    if (this.draining) checks.shutdown = 'draining';
    await Promise.all(
      [...this.checks].map(async ([name, check]) => {
        try {
          await withTimeout(check(), 2000);
          checks[name] = 'ok';
        } catch (error) {
          checks[name] = error instanceof Error ? error.message : String(error);
        }
      }),
    );
    const ready = !this.draining && Object.values(checks).every((v) => v === 'ok');
    return { ready, checks };
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function mountHealthRoutes(router: Router, readiness: Readiness) {
  router.get('/health/live', (ctx: Context) => {
    ctx.body = { status: 'UP' };
  });
  router.get('/health/ready', async (ctx: Context) => {
    const [{ ready, checks }, details] = await Promise.all([
      readiness.evaluate(),
      readiness.describe(),
    ]);
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'UP' : 'DOWN',
      checks,
      ...(Object.keys(details).length ? { details } : {}),
    };
  });
  router.get('/actuator/health', async (ctx: Context) => {
    const { ready } = await readiness.evaluate();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'UP' : 'DOWN' };
  });
}
