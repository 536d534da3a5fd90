import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { createDocument, type ZodOpenApiComponentsObject } from 'zod-openapi';
import type { RouteRegistry } from './routes.ts';

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
  securitySchemes?: ZodOpenApiComponentsObject['securitySchemes'];
}

export function buildOpenApiDocument(registry: RouteRegistry, info: OpenApiInfo) {
  return createDocument({
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    paths: registry.openApiPaths(),
    components: info.securitySchemes ? { securitySchemes: info.securitySchemes } : {},
  });
}

const require = createRequire(import.meta.url);
const swaggerDist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const DOC_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const docsPage = (title: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${title} — API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="alternate" type="application/json" href="/openapi.json" title="OpenAPI document">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>`;

// Inline scripts would need a weaker Content-Security-Policy, so the bootstrap is its own file.
const docsInit = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });`;

/** Serves /openapi.json (generated once, on first request) and an interactive page at /docs. */
export function mountDocsRoutes(router: Router, registry: RouteRegistry, info: OpenApiInfo) {
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  router.get('/openapi.json', (ctx: Context) => {
    document ??= buildOpenApiDocument(registry, info);
    ctx.body = document;
  });
  router.get('/docs', (ctx: Context) => {
    ctx.type = 'html';
    ctx.body = docsPage(info.title);
  });
  router.get('/docs/assets/:file', async (ctx: Context) => {
    const file = String((ctx.params as Record<string, string>).file);
    if (file === 'init.js') {
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = docsInit;
      return;
    }
    const type = DOC_ASSETS[file];
    if (!type) return;
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await readFile(path.join(swaggerDist, file));
  });
}
