import { describe, expect, test } from '@jest/globals';
import { RunCache } from '../../src/data/history/runCache.ts';

const run = (text: string, empty = false) => ({ items: Buffer.from(text), empty });

describe('RunCache', () => {
  test('gives back what was kept under the same key, and nothing under another', () => {
    const cache = new RunCache(1024);
    cache.set('a', run('{"x":1}'));
    expect(cache.get('a')?.items.toString()).toBe('{"x":1}');
    expect(cache.get('b')).toBeUndefined();
    expect([cache.hits, cache.misses]).toEqual([1, 1]);
  });

  test('stays within its bytes (keys and texts) by dropping the least recently used first', () => {
    const cache = new RunCache(30);
    cache.set('a', run('a'.repeat(9)));
    cache.set('b', run('b'.repeat(9)));
    cache.set('c', run('c'.repeat(9)));
    cache.get('a'); // now the most recently used
    cache.set('d', run('d'.repeat(9)));
    expect(cache.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((key) => cache.get(key)?.items.length)).toEqual([9, 9, 9]);
    expect(cache.heldBytes).toBe(30);
  });

  test('replacing a key counts its bytes once; a run larger than the cache is not kept', () => {
    const cache = new RunCache(16);
    cache.set('a', run('a'.repeat(8)));
    cache.set('a', run('a'.repeat(12), true));
    expect(cache.heldBytes).toBe(13);
    expect(cache.get('a')?.empty).toBe(true);
    cache.set('huge', run('h'.repeat(13)));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  test('a cache of zero bytes keeps nothing', () => {
    const cache = new RunCache(0);
    cache.set('a', run('x'));
    expect(cache.size).toBe(0);
  });
});
