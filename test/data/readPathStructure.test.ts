import { describe, expect, test } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The read path stays one a newcomer can follow: no import cycles among its files. (No file of
// src/ may reach 400 lines either: `npm run lint` checks that, scripts/check-file-sizes.ts.)

const DIR = resolve(import.meta.dirname, '../../src/data/history');

function sources(): Map<string, string> {
  const files = readdirSync(DIR).filter((name) => name.endsWith('.ts'));
  return new Map(files.map((name) => [name, readFileSync(join(DIR, name), 'utf8')]));
}

/** Local imports (type-only ones too: they still tie the files' meanings together). */
function importsOf(text: string): string[] {
  return [...text.matchAll(/from '\.\/([\w.]+\.ts)'/g)].map((match) => match[1]!);
}

/** One import cycle as a path of file names, or null when there is none. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

describe('src/data/history', () => {
  test('the cycle finder finds a cycle when there is one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
    ]);
    expect(findCycle(graph)).toEqual(['a.ts', 'b.ts', 'c.ts', 'a.ts']);
    expect(findCycle(new Map([['a.ts', ['b.ts']]]))).toBeNull();
  });

  test('has no import cycles', () => {
    const graph = new Map([...sources()].map(([name, text]) => [name, importsOf(text)]));
    expect(graph.size).toBeGreaterThan(5);
    expect(findCycle(graph)).toBeNull();
  });
});
