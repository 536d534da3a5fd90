#!/usr/bin/env node
// Entry point of the `platform` command. Plain JavaScript on purpose: it must be able to tell an old
// Node to step aside before any TypeScript (run natively by Node 24) is loaded.
import { assertSupportedNode } from '../scripts/check-node.mjs';

assertSupportedNode();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
