import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseEnv } from 'node:util';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from '@jest/globals';
import { Ajv } from 'ajv';
import { pino } from 'pino';
import { parse } from 'yaml';
import { configSchema, loadConfig } from '../../src/shared/config.ts';
import { metricsRegistry } from '../../src/shared/metrics.ts';
import { sessionKeys } from '../../src/api/session/sessionMiddleware.ts';
import { readPromql } from '../support/promql.ts';

// Docker cannot run on our machines, so the deployment files are checked here instead: against the
// Compose specification's JSON schema, and against the code (ports, roles, configuration
// variables, metric names and labels) so they cannot drift from it unnoticed.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const compose = parse(read('docker-compose.yml'), { merge: true });
const services: Record<string, any> = compose.services;

/** The variables an operator gives compose: .env.example, copied to .env as the README says. */
const exampleEnv = parseEnv(read('.env.example'));

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g;

/**
 * Compose's interpolation: ${VAR}, ${VAR:-default} / ${VAR-default}, and ${VAR:?message} /
 * ${VAR?message}, which stops compose with the message when VAR is missing (or empty, with ':').
 */
function interpolate(value: string, env: Record<string, string | undefined> = exampleEnv): string {
  return value.replace(VARIABLE, (_all, name: string, colon?: string, kind?: string, arg = '') => {
    const given = env[name];
    const missing = given === undefined || (colon === ':' && given === '');
    if (kind === '?' && missing) {
      throw new Error(`required variable ${name} is missing a value: ${String(arg)}`);
    }
    if (kind === '-' && missing) return String(arg);
    return given ?? '';
  });
}

function environmentOf(
  service: any,
  env: Record<string, string | undefined> = exampleEnv,
): Record<string, string> {
  const entries = Object.entries((service.environment ?? {}) as Record<string, unknown>);
  return Object.fromEntries(entries.map(([k, v]) => [k, interpolate(String(v), env)]));
}

/** Every ${…} in the compose file (comments included: compose does not read those). */
function composeVariables() {
  const text = read('docker-compose.yml')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');
  return [...text.matchAll(VARIABLE)].map(([, name, , kind]) => ({
    name: name!,
    required: kind === '?',
  }));
}

/** The roles the contract defines for `platform start --role` (docs: contract.md, part C). */
const CONTRACT_ROLES = ['all', 'data', 'api', 'worker'];

function roleOf(service: any): string | undefined {
  const command: string[] = service.command ?? [];
  if (command[0] !== 'start') return undefined;
  const at = command.indexOf('--role');
  return at === -1 ? 'all' : command[at + 1];
}

/** The port a platform role listens on, from the service's configuration. */
function listeningPort(service: any): number | undefined {
  const config = loadConfig(environmentOf(service));
  const role = roleOf(service);
  if (role === 'data') return config.DATA_PORT;
  if (role === 'api') return config.API_PORT;
  if (role === 'worker') return config.WORKER_METRICS_PORT;
  return undefined;
}

/** Where a role's process serves /metrics: the data port, else the ops listener (never the API's). */
function metricsPort(service: any): number | undefined {
  const config = loadConfig(environmentOf(service));
  const role = roleOf(service);
  if (role === 'data' || role === 'all') return config.DATA_PORT;
  if (role === 'api' || role === 'worker') return config.WORKER_METRICS_PORT;
  return undefined;
}

function healthcheckUrl(service: any): URL | undefined {
  const test: string[] = service.healthcheck?.test ?? [];
  const url = test.find((part) => /^https?:\/\//.test(part));
  return url ? new URL(url) : undefined;
}

function bindMounts(service: any): { source: string; target: string }[] {
  return ((service.volumes ?? []) as string[])
    .filter((v) => v.startsWith('./'))
    .map((v) => {
      const [source = '', target = ''] = v.split(':');
      return { source, target };
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}

/** Module specifiers a file loads when it runs: static imports (not `import type`) and import(). */
function runtimeImports(source: string): string[] {
  const specifiers: string[] = [];
  for (const [, typeOnly, specifier] of source.matchAll(
    // The clause before `from` never crosses a statement's end, and a specifier holds no
    // space: a string such as '… from ' + … inside an exported declaration is not an import.
    /^\s*(?:import|export)\s+(type\s+)?(?:[^;]*?\s+from\s+)?['"]([^'"\s]+)['"]/gm,
  )) {
    if (!typeOnly && specifier) specifiers.push(specifier);
  }
  for (const [, specifier] of source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    if (specifier) specifiers.push(specifier);
  }
  // register('<module>', …) loads a module hook (telemetry).
  for (const [, specifier] of source.matchAll(/\bregister\(\s*['"]([^'"]+)['"]/g)) {
    if (specifier) specifiers.push(specifier);
  }
  return specifiers;
}

const appServices = Object.entries(services).filter(([, s]) => s.build !== undefined);
const platformRoles = appServices.filter(([, s]) => roleOf(s) !== undefined);

describe('docker-compose.yml', () => {
  test('conforms to the Compose specification schema', () => {
    const require = createRequire(import.meta.url);
    const schemaPath = join(
      require.resolve('dclint/package.json').replace(/package\.json$/, ''),
      'schemas/compose.schema.json',
    );
    // Draft-07, Ajv's default; its "$schema" spelling (no trailing #) is unknown to Ajv.
    const { $schema: _draft, ...schema } = JSON.parse(readFileSync(schemaPath, 'utf8'));
    const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
    const validate = ajv.compile(schema);
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    // The validator does reject what Compose would.
    expect(validate({ services: { web: { image: 'x', restart: 'sometimes', prots: [] } } })).toBe(
      false,
    );
  });

  test('brings up the database, migrations, data, API, workers, Prometheus and Grafana', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining([
        'timescaledb',
        'migrate',
        'data',
        'api',
        'worker',
        'prometheus',
        'grafana',
      ]),
    );
    expect(services.timescaledb.image).toMatch(/^timescale\/timescaledb:\d+\.\d+\.\d+-pg\d+$/);
    expect(services.prometheus.image).toMatch(/^prom\/prometheus:v\d+\.\d+\.\d+$/);
    expect(services.grafana.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    expect(services.migrate.command).toEqual(['migrate']);
  });

  test('every service names an image or a build, third-party images pinned to a version', () => {
    for (const [name, service] of Object.entries(services)) {
      expect({ name, ok: service.image !== undefined || service.build !== undefined }).toEqual({
        name,
        ok: true,
      });
      if (service.build === undefined) {
        expect({ name, image: service.image }).toEqual({
          name,
          image: expect.stringMatching(/^[\w./-]+:[\w.-]+$/),
        });
        expect(service.image).not.toMatch(/:latest$/);
      }
    }
  });

  test('depends_on names existing services with conditions they can meet', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [target, spec] of Object.entries((service.depends_on ?? {}) as object)) {
        expect({ name, target, exists: target in services }).toEqual({
          name,
          target,
          exists: true,
        });
        const condition = (spec as { condition: string }).condition;
        if (condition === 'service_healthy') {
          expect(services[target].healthcheck?.test).toBeDefined();
          expect(services[target].healthcheck?.disable).not.toBe(true);
        }
        if (condition === 'service_completed_successfully') {
          expect(services[target].restart).toBe('no');
        }
      }
    }
  });

  test('platform roles are the contract roles and their environment is valid configuration', () => {
    expect(platformRoles.map(([name]) => name).sort()).toEqual(['api', 'data', 'worker']);
    const known = new Set(Object.keys(configSchema.shape));
    for (const [name, service] of appServices) {
      const role = roleOf(service);
      if (role !== undefined) expect(CONTRACT_ROLES).toContain(role);
      for (const variable of Object.keys(service.environment ?? {})) {
        expect({ name, variable, known: known.has(variable) }).toEqual({
          name,
          variable,
          known: true,
        });
      }
      expect(() => loadConfig(environmentOf(service))).not.toThrow();
    }
  });

  test('every HTTP-serving service publishes or exposes its port and has a matching health check', () => {
    for (const [name, service] of platformRoles) {
      const port = listeningPort(service)!;
      const published = ((service.ports ?? []) as string[]).map((p) => Number(p.split(':').at(-1)));
      const exposed = ((service.expose ?? []) as string[]).map(Number);
      expect({ name, port, offered: [...published, ...exposed].includes(port) }).toEqual({
        name,
        port,
        offered: true,
      });
      const url = healthcheckUrl(service);
      expect({ name, health: url?.pathname, port: Number(url?.port) }).toEqual({
        name,
        health: '/health/ready',
        port,
      });
      expect(service.healthcheck.test.slice(0, 3)).toEqual([
        'CMD',
        'node',
        'scripts/healthcheck.mjs',
      ]);
    }
    for (const name of ['timescaledb', 'prometheus', 'grafana']) {
      expect(services[name].healthcheck.test.length).toBeGreaterThan(1);
      expect(services[name].ports.length).toBeGreaterThan(0);
    }
  });

  test('workers scale out: several replicas, no host port to collide on', () => {
    expect(services.worker.deploy.replicas).toBeGreaterThanOrEqual(2);
    expect(services.worker.ports).toBeUndefined();
  });

  test('stop_grace_period leaves room for the drain and the grace of the shutdown', () => {
    for (const [name, service] of platformRoles) {
      const config = loadConfig(environmentOf(service));
      const stopSeconds = Number(/^(\d+)s$/.exec(service.stop_grace_period)?.[1]);
      expect({
        name,
        fits: config.SHUTDOWN_DRAIN_SECONDS + config.SHUTDOWN_GRACE_SECONDS < stopSeconds,
      }).toEqual({ name, fits: true });
    }
  });

  test('refuses to start without SESSION_KEYS, naming .env.example, which the README names', () => {
    // The image runs with NODE_ENV=production, where the API exits without session keys; compose
    // must stop first, with a message, instead of restarting the API forever.
    expect(read('Dockerfile')).toMatch(/NODE_ENV=production/);
    expect(services.api.environment.SESSION_KEYS).toMatch(
      /^\$\{SESSION_KEYS:\?[^}]*\.env\.example[^}]*\}$/,
    );
    expect(() => environmentOf(services.api, {})).toThrow(
      /required variable SESSION_KEYS is missing a value: .*\.env\.example/,
    );
    expect(() => environmentOf(services.api, { SESSION_KEYS: '' })).toThrow(/SESSION_KEYS/);
    expect(read('README.md')).toContain('cp .env.example .env');
  });

  test('.env.example gives every variable compose requires, and lists every one it reads', () => {
    const variables = composeVariables();
    expect(variables.filter((v) => v.required).map((v) => v.name)).toContain('SESSION_KEYS');
    for (const { name, required } of variables) {
      expect({ name, listed: name in exampleEnv }).toEqual({ name, listed: true });
      if (required) {
        expect({ name, value: exampleEnv[name] }).toEqual({
          name,
          value: expect.stringMatching(/\S/),
        });
      }
    }
    // With it, the API's configuration passes in production (the image's NODE_ENV), keys included.
    const config = loadConfig({ ...environmentOf(services.api), NODE_ENV: 'production' });
    expect(config.SESSION_KEYS?.length).toBeGreaterThan(0);
    expect(sessionKeys(config, pino({ level: 'silent' }))).toEqual(config.SESSION_KEYS);
  });

  test('named volumes are declared and bind mounts point at files in the repository', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const [name, service] of Object.entries(services)) {
      for (const volume of (service.volumes ?? []) as string[]) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) {
          expect({ name, source, exists: existsSync(join(ROOT, source)) }).toEqual({
            name,
            source,
            exists: true,
          });
        } else {
          expect(declared).toContain(source);
        }
      }
    }
  });
});

/** Metric names Prometheus itself adds or that come from the targets' labels. */
const PROMETHEUS_METRICS = new Set(['up']);
const TARGET_LABELS = ['job', 'instance'];

function registeredMetric(name: string): { labels: string[] } | undefined {
  const direct = metricsRegistry.getSingleMetric(name) as
    { labelNames?: string[]; type?: string } | undefined;
  if (direct) return { labels: [...(direct.labelNames ?? [])] };
  const base = /^(.*)_(bucket|count|sum)$/.exec(name);
  const histogram = base
    ? (metricsRegistry.getSingleMetric(base[1]!) as { labelNames?: string[]; type?: string })
    : undefined;
  if (histogram && ['histogram', 'summary'].includes(histogram.type ?? '')) {
    return { labels: [...(histogram.labelNames ?? []), ...(base![2] === 'bucket' ? ['le'] : [])] };
  }
  return undefined;
}

/** Fails with the expression when it uses a metric or a label the code does not register. */
function expectKnownMetrics(expr: string) {
  const { selectors, grouping } = readPromql(expr);
  expect({ expr, selectors: selectors.length > 0 }).toEqual({ expr, selectors: true });
  const available = new Set(TARGET_LABELS);
  for (const { metric, matchers } of selectors) {
    if (PROMETHEUS_METRICS.has(metric)) continue;
    const known = registeredMetric(metric);
    expect({ expr, metric, registered: known !== undefined }).toEqual({
      expr,
      metric,
      registered: true,
    });
    for (const label of known!.labels) available.add(label);
    for (const label of matchers) {
      expect({
        expr,
        metric,
        label,
        known: [...known!.labels, ...TARGET_LABELS].includes(label),
      }).toEqual({ expr, metric, label, known: true });
    }
  }
  for (const label of grouping) {
    expect({ expr, label, known: available.has(label) }).toEqual({ expr, label, known: true });
  }
}

describe('Prometheus configuration', () => {
  const mount = bindMounts(services.prometheus).find((m) => m.target === '/etc/prometheus')!;
  const config = parse(read(join(mount.source, 'prometheus.yml')));

  test('scrapes every platform role at the service name and the port that serves its /metrics', () => {
    const jobs = new Map<string, { name: string; port: number }>();
    for (const job of config.scrape_configs) {
      for (const sd of job.dns_sd_configs ?? []) {
        for (const name of sd.names) jobs.set(job.job_name, { name, port: sd.port });
      }
    }
    for (const [name, service] of platformRoles) {
      expect(jobs.get(name)).toEqual({ name, port: metricsPort(service) });
      const exposed = ((service.expose ?? []) as string[]).map(Number);
      const published = ((service.ports ?? []) as string[]).map((p) => Number(p.split(':').at(-1)));
      expect({ name, offered: [...exposed, ...published].includes(metricsPort(service)!) }).toEqual(
        {
          name,
          offered: true,
        },
      );
    }
    for (const { name } of jobs.values()) expect(Object.keys(services)).toContain(name);
    expect(jobs.get('api')?.port).not.toBe(loadConfig(environmentOf(services.api)).API_PORT);
  });

  test('alert rules exist where prometheus.yml says and use registered metrics', () => {
    for (const file of config.rule_files as string[]) {
      const local = join(mount.source, file.replace(`${mount.target}/`, ''));
      const rules = parse(read(local));
      const exprs = rules.groups.flatMap((g: any) => g.rules.map((r: any) => String(r.expr)));
      expect(exprs.length).toBeGreaterThan(3);
      for (const expr of exprs) expectKnownMetrics(expr);
    }
  });
});

describe('Grafana provisioning', () => {
  const mounts = bindMounts(services.grafana);
  const provisioning = mounts.find((m) => m.target === '/etc/grafana/provisioning')!;
  const datasources = parse(read(join(provisioning.source, 'datasources/prometheus.yml')));
  const providers = parse(read(join(provisioning.source, 'dashboards/platform.yml')));
  const dashboardsDir = mounts.find((m) => m.target === providers.providers[0].options.path)!;
  const dashboard = JSON.parse(read(join(dashboardsDir.source, 'platform.json')));
  const panels: any[] = dashboard.panels.filter((p: any) => p.type !== 'row');

  test('the datasource is the compose Prometheus and dashboards load from the mounted folder', () => {
    const source = datasources.datasources[0];
    const url = new URL(source.url);
    expect(url.hostname).toBe('prometheus');
    expect(services.prometheus.ports.some((p: string) => p.endsWith(`:${url.port}`))).toBe(true);
    expect(dashboardsDir).toBeDefined();
    expect(statSync(join(ROOT, dashboardsDir.source)).isDirectory()).toBe(true);
    for (const panel of panels) expect(panel.datasource.uid).toBe(source.uid);
  });

  test('the dashboard covers what operators watch', () => {
    const exprs = panels.flatMap((p) => p.targets.map((t: any) => String(t.expr))).join('\n');
    for (const metric of [
      'http_server_request_duration_seconds_count',
      'http_server_request_duration_seconds_bucket',
      'ingest_rows_inserted_total',
      'ingest_rows_rejected_total',
      'worker_queue_depth',
      'worker_jobs_total',
      'rollup_lag_seconds',
      'socketio_connected_clients',
      'harvest_source_last_success_timestamp_seconds',
      'database_replica_lag_seconds',
      'database_replica_lag_bytes',
      'database_replica_in_use',
      'database_routed_reads_total',
      'database_replica_fallbacks_total',
    ]) {
      expect(exprs).toContain(metric);
    }
  });

  test('every query uses metrics and labels the code registers', () => {
    for (const panel of panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const target of panel.targets) expectKnownMetrics(String(target.expr));
    }
    for (const variable of dashboard.templating.list) {
      const [, metric, label] = /label_values\((\w+),\s*(\w+)\)/.exec(variable.query.query)!;
      expect(registeredMetric(metric!)?.labels).toContain(label);
    }
  });

  test('panels have unique ids and fit the 24-column grid', () => {
    const ids = dashboard.panels.map((p: any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels) {
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages: string[][] = [];
  for (const line of instructions) {
    if (/^FROM\s/i.test(line)) stages.push([]);
    stages.at(-1)?.push(line);
  }
  const runtime = stages.at(-1)!;

  test('is multi-stage on the Node 24 image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage[0]).toMatch(/^FROM node:24[\w.-]* AS \w+$/);
  });

  test('installs production dependencies from the lockfile with npm install', () => {
    const install = instructions.find((line) => /npm (install|ci)/.test(line))!;
    expect(install).toMatch(/npm install --omit=dev/);
    const copiesLockfile = instructions.findIndex((l) => /^COPY .*package-lock\.json/.test(l));
    expect(copiesLockfile).toBeGreaterThanOrEqual(0);
    expect(copiesLockfile).toBeLessThan(instructions.indexOf(install));
  });

  test('runs as a non-root user with a health check and the platform entry point', () => {
    const user = runtime.filter((l) => /^USER\s/.test(l)).at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^USER\s+(root|0)(:|$)/);
    const healthcheck = runtime.find((l) => /^HEALTHCHECK\s/.test(l))!;
    expect(healthcheck).toMatch(/CMD \["node", "scripts\/healthcheck\.mjs"\]/);
    expect(existsSync(join(ROOT, 'scripts/healthcheck.mjs'))).toBe(true);
    expect(runtime).toContain('ENTRYPOINT ["node", "bin/platform.mjs"]');
  });

  test('copies only what exists and is not excluded from the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const line of instructions.filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))) {
      const parts = line.split(/\s+/).slice(1);
      for (const source of parts.slice(0, -1)) {
        expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({
          source,
          exists: true,
        });
        expect(ignored).not.toContain(source);
      }
    }
  });

  test('every package the running code imports is a production dependency (--omit=dev)', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const runtimeFiles = ['src', 'workers', 'bin']
      .flatMap((dir) => sourceFiles(join(ROOT, dir)))
      .concat(join(ROOT, 'scripts/healthcheck.mjs'), join(ROOT, 'scripts/check-node.mjs'))
      // Browser code of the dashboard imports by URL, not from node_modules.
      .filter((file) => !/\/test\//.test(file) && !file.includes('/src/api/public/'));
    const missing = new Set<string>();
    for (const file of runtimeFiles) {
      for (const specifier of runtimeImports(readFileSync(file, 'utf8'))) {
        if (
          specifier.startsWith('.') ||
          specifier.startsWith('node:') ||
          specifier.startsWith('#')
        ) {
          continue;
        }
        const name = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0]!;
        if (!(name in pkg.dependencies)) missing.add(`${name} (${file.slice(ROOT.length)})`);
      }
    }
    expect([...missing]).toEqual([]);
  });

  test('exposes the default ports of every role', () => {
    const defaults = loadConfig({});
    const exposed = runtime
      .filter((l) => /^EXPOSE\s/.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1).map(Number));
    expect(exposed).toEqual(
      expect.arrayContaining([defaults.API_PORT, defaults.DATA_PORT, defaults.WORKER_METRICS_PORT]),
    );
  });
});
