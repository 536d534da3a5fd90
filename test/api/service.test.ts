import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startOpsListener } from '../../src/shared/http/opsServer.ts';
import { metricsRegistry } from '../../src/shared/metrics.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';

const API_PATHS = [
  '/api/authorize/signup',
  '/api/authorize/login',
  '/api/authorize/isloggedin',
  '/api/authorize/logout',
  '/api/account/image/upload',
  '/api/account/get/{id}/profile-picture',
  '/api/account/get/{id}/has-profile-picture',
  '/api/portfolio/get',
  '/api/portfolio/add',
  '/api/portfolio/empty',
  '/api/portfolio/history/get',
  '/api/portfolio/history/profit',
  '/api/portfolio/history/get/asset',
  '/api/portfolio/history/get/asset/{currencyName}',
  '/api/currency/performance/{code}',
  '/api/news-sentiment/add',
  '/api/portfolio/history/profit/{currencyCode}',
];

describe('the API service', () => {
  let harness: ApiHarness;
  beforeAll(async () => {
    harness = await startApiHarness({ WORKER_METRICS_PORT: '0' });
  });
  afterAll(async () => {
    await harness.close();
  });

  test('health: live, ready (database, migrations, data module), actuator', async () => {
    const client = harness.client();
    expect((await client.get('/health/live')).body).toEqual({ status: 'UP' });
    const ready = await client.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'UP',
      checks: { database: 'ok', migrations: 'ok', dataModule: 'ok' },
    });
    expect((await client.get('/actuator/health')).body).toEqual({ status: 'UP' });
  });

  test('every response carries a request id, the caller’s when sane', async () => {
    const response = await harness
      .client()
      .get('/health/live', { headers: { 'x-request-id': 'abc-123' } });
    expect(response.headers.get('x-request-id')).toBe('abc-123');
  });

  test('/openapi.json describes every route, /api/currency/value included', async () => {
    const { body } = await harness.client().get('/openapi.json');
    expect(body.openapi).toBe('3.1.0');
    for (const path of [...API_PATHS, '/api/currency/value'])
      expect(body.paths[path]).toBeDefined();
    expect(Object.keys(body.paths['/api/authorize/logout']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/api/currency/value']).sort()).toEqual(['get', 'post']);
    expect(body.components.schemas.Portfolio).toBeDefined();
    expect(body.components.schemas.PortfolioHistory).toBeDefined();
    expect(body.components.securitySchemes.sessionCookie).toMatchObject({
      in: 'cookie',
      name: 'sid',
    });
    const upload = body.paths['/api/account/image/upload'].post;
    expect(upload.requestBody.content['multipart/form-data'].schema.$ref).toBe(
      '#/components/schemas/ProfilePictureUpload',
    );
    expect(body.components.schemas.ProfilePictureUpload.properties.file.format).toBe('binary');
    expect(Object.keys(upload.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '413',
      '415',
      '503',
    ]);
  });

  test('/docs serves the interactive reference', async () => {
    const page = await harness.client().get('/docs');
    expect(page.headers.get('content-type')).toMatch(/html/);
    expect((await harness.client().get('/docs/assets/init.js')).text).toContain('/openapi.json');
  });

  test('the public port serves no /metrics; the ops listener reports API routes and sign-in outcomes', async () => {
    const client = harness.client();
    await client.post('/api/authorize/login', { email: 'nobody@example.com', password: 'x' });
    const publicMetrics = await client.get('/metrics');
    expect(publicMetrics.status).toBe(404);
    expect(publicMetrics.text).not.toContain('api_login_attempts_total');
    const ops = await startOpsListener(harness.runtime, []);
    let text: string;
    try {
      text = await (await fetch(`${ops.url!}/metrics`)).text();
    } finally {
      await ops.stop(1000);
    }
    expect(text).toMatch(
      /http_server_request_duration_seconds_bucket\{[^}]*service="api"[^}]*route="\/api\/authorize\/login"/,
    );
    expect(text).toMatch(/api_login_attempts_total\{outcome="rejected"\} [1-9]/);
    expect(text).toContain('api_data_module_requests_total');
  });

  test('unknown routes get the JSON 404', async () => {
    const response = await harness.client().get('/api/nothing-here');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('a body refused before routing (bad JSON) is counted under its route, not "unmatched"', async () => {
    const answer = await fetch(`${harness.url}/api/currency/value`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"currencyCode": ',
    });
    expect(answer.status).toBe(400);
    const text = await metricsRegistry.getSingleMetricAsString(
      'http_server_request_duration_seconds',
    );
    expect(text).toMatch(
      /http_server_request_duration_seconds_count\{service="api",method="POST",route="\/api\/currency\/value",status_code="400"\} [1-9]/,
    );
  });

  test('a method a route lacks gets the JSON 405 with Allow, an unknown one the JSON 501', async () => {
    for (const url of [
      `${harness.url}/api/portfolio/get`,
      `${harness.dataUrl}/data/currency/all`,
    ]) {
      const wrong = await fetch(url, { method: 'PUT' });
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toContain('GET');
      expect(wrong.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await wrong.json()) as { error: unknown }).error).toMatchObject({
        code: 'method_not_allowed',
      });
      const unknown = await fetch(url, { method: 'PROPFIND' });
      expect(unknown.status).toBe(501);
      expect(((await unknown.json()) as { error: unknown }).error).toMatchObject({
        code: 'not_implemented',
      });
    }
  });
});

describe('the documentation profile', () => {
  let harness: ApiHarness;
  beforeAll(async () => {
    // No data module at all: the reference must not need one.
    harness = await startApiHarness({}, { profile: 'docs', withData: false });
  });
  afterAll(async () => {
    await harness.close();
  });

  test('does not mount /api/currency/value, and is ready without a data module', async () => {
    const client = harness.client();
    expect(
      (await client.post('/api/currency/value', { currencyCode: 'BTC', shares: 1 })).status,
    ).toBe(404);
    expect((await client.get('/api/currency/value?currencyCode=BTC&shares=1')).status).toBe(404);
    const { body } = await client.get('/openapi.json');
    expect(body.paths['/api/currency/value']).toBeUndefined();
    for (const path of API_PATHS) expect(body.paths[path]).toBeDefined();
    const ready = await client.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: 'ok', migrations: 'ok' });
    expect((await client.get('/docs')).status).toBe(200);
  });

  test('still signs users in', async () => {
    const { client } = await harness.signedInClient();
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
    expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
  });
});
