import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService, type ApiServiceOptions } from '../../src/api/service.ts';
import type { Config } from '../../src/shared/config.ts';
import { listen, type RunningServer } from '../../src/shared/http/server.ts';
import { ApiClient, newAccount } from './apiClient.ts';
import { serve } from './http.ts';
import { createTestRuntime, listeningForChanges, type TestRuntime } from './runtime.ts';

export const TEST_SESSION_KEY = 'test-session-key-0123456789abcdef0123456789';

export interface ApiHarness {
  runtime: TestRuntime;
  url: string;
  dataUrl: string;
  service: ReturnType<typeof createApiService>;
  client(): ApiClient;
  /** A client signed in as a new user; its id is the user's. */
  signedInClient(): Promise<{
    client: ApiClient;
    userId: number;
    account: ReturnType<typeof newAccount>;
  }>;
  stopData(): Promise<void>;
  startData(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real data module and a real API on one fresh database, both on ephemeral ports; the API
 * calls the data module over HTTP with a read token, as in production.
 */
export async function startApiHarness(
  env: Partial<Record<keyof Config, string>> = {},
  options: Pick<ApiServiceOptions, 'profile'> & { withData?: boolean } = {},
): Promise<ApiHarness> {
  const runtime = await createTestRuntime({
    SESSION_KEYS: TEST_SESSION_KEY,
    DATA_CACHE_MS: '0',
    ...env,
  });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  const { token } = await createToken(runtime.pool, 'api', ['read', 'write']);
  let data: RunningServer | undefined =
    options.withData === false ? undefined : await serve(createDataService(runtime).app);
  const dataPort = data?.port ?? 9; // discard port: nothing listens there
  const dataUrl = `http://127.0.0.1:${dataPort}`;
  const service = createApiService(runtime, {
    dataUrl,
    dataToken: token,
    profile: options.profile,
  });
  const api = await serve(service.app);
  await listeningForChanges(runtime);
  const harness: ApiHarness = {
    runtime,
    url: api.url,
    dataUrl,
    service,
    client: () => new ApiClient(api.url),
    async signedInClient() {
      const client = new ApiClient(api.url);
      const account = newAccount();
      const response = await client.post('/api/authorize/signup', account);
      if (response.status !== 200)
        throw new Error(`signup failed: ${response.status} ${response.text}`);
      const userId = await runtime.pool.oneFirst(
        sql.unsafe`SELECT id FROM app.users WHERE email = ${account.email}`,
      );
      return { client, userId: Number(userId), account };
    },
    async stopData() {
      await data?.close(1000);
      data = undefined;
    },
    async startData() {
      data ??= await listen(createDataService(runtime).app, '127.0.0.1', dataPort);
    },
    async close() {
      await Promise.all([api.close(1000), data?.close(1000)]);
      await runtime.dispose();
    },
  };
  return harness;
}
