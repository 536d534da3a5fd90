// Builds the OpenAPI documents of the data module and the application API from their route
// declarations and validates both with swagger-parser (`npm run lint`). No database is needed:
// building the routes only wires them, and the runtime below refuses any query.

import SwaggerParser from '@apidevtools/swagger-parser';
import pg from 'pg';
import { createApiService } from '../src/api/service.ts';
import { createDataService } from '../src/data/service.ts';
import { loadConfig } from '../src/shared/config.ts';
import { ReadRouter } from '../src/shared/db/readRouter.ts';
import { createLogger } from '../src/shared/logger.ts';
import type { Runtime } from '../src/shared/runtime.ts';

function documentsOnlyRuntime(): Runtime {
  const config = loadConfig(
    {},
    {
      DATABASE_URL: 'postgres://documents-only@127.0.0.1:9/none',
      SESSION_KEYS: 'documents-only-session-key-0123456789abcdef',
      DATA_TOKEN: 'documents-only',
    },
  );
  const refuse = new Proxy(
    {},
    {
      get(_target, property) {
        throw new Error(
          `building the OpenAPI documents touched the database (${String(property)})`,
        );
      },
    },
  );
  return {
    config,
    logger: createLogger('silent'),
    pool: refuse as Runtime['pool'],
    readPool: refuse as Runtime['readPool'],
    reads: new ReadRouter({
      pool: refuse as Runtime['pool'],
      readPool: refuse as Runtime['readPool'],
    }),
    // node-postgres pools connect on first use only, which never comes.
    pgPool: new pg.Pool({ connectionString: config.DATABASE_URL }),
    changeEvents: () => undefined,
    close: async () => {},
  };
}

const runtime = documentsOnlyRuntime();
const documents = {
  data: createDataService(runtime).openApiDocument(),
  api: createApiService(runtime).openApiDocument(),
};
let failed = false;
for (const [name, document] of Object.entries(documents)) {
  try {
    // validate() dereferences in place: give it a copy.
    await SwaggerParser.validate(structuredClone(document) as never);
    console.log(`openapi: the ${name} document (${document.info.title}) is valid`);
  } catch (error) {
    failed = true;
    console.error(`openapi: the ${name} document is invalid: ${(error as Error).message}`);
  }
}
await runtime.pgPool.end();
process.exitCode = failed ? 1 : 0;
