import type Router from '@koa/router';
import type { Context } from 'koa';

export type ReadinessCheck = () => Promise<void>;

/**
 * Liveness answers while the event loop does; readiness runs the service's checks (database
 * reachable, migrations applied, …) and turns 503 as soon as shutdown begins.
 */
export class Readiness {
  private draining = false;
  private readonly checks = new Map<string, ReadinessCheck>();

  addCheck(name: string, check: ReadinessCheck) {
    this.checks.set(name, check);
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
    const { ready, checks } = await readiness.evaluate();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'UP' : 'DOWN', checks };
  });
  router.get('/actuator/health', async (ctx: Context) => {
    const { ready } = await readiness.evaluate();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'UP' : 'DOWN' };
  });
}
