#!/usr/bin/env node
// Entry point of the `platform` command. Plain JavaScript on purpose: it must be able to tell an old
// Node to step aside before any TypeScript (run natively by Node 24) is loaded.
import module from 'node:module';
import { assertSupportedNode } from '../scripts/check-node.mjs';

assertSupportedNode();
// Every later run reuses the compiled (and type-stripped) modules from the disk cache (in the
// system's temporary directory, or NODE_COMPILE_CACHE), which roughly halves the start-up of a
// short command. Where the cache cannot be written, it is silently off.
module.enableCompileCache?.();
// Tracing (only when OTEL_EXPORTER_OTLP_ENDPOINT is set) must start before the modules it patches
// (http, koa, pg) are first imported, so the CLI is loaded after it.
const { startTelemetry } = await import('../src/shared/telemetry.ts');
await startTelemetry();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
