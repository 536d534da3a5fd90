#!/usr/bin/env node
// Entry point of the `platform` command. Plain JavaScript on purpose: it must be able to tell an old
// Node to step aside before any TypeScript (run natively by Node 24) is loaded.
import { assertSupportedNode } from '../scripts/check-node.mjs';

assertSupportedNode();
// Tracing (only when OTEL_EXPORTER_OTLP_ENDPOINT is set) must start before the modules it patches
// (http, koa, pg) are first imported, so the CLI is loaded after it.
const { startTelemetry } = await import('../src/shared/telemetry.ts');
await startTelemetry();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
