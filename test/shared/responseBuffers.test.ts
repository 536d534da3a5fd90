import { expect, test } from '@jest/globals';
import { ResponseBuffers } from '../../src/shared/http/responseBuffers.ts';

test('a Buffer is never handed out twice until it is given back', () => {
  const buffers = new ResponseBuffers(4, 1024 * 1024);
  const first = buffers.take(1000);
  const second = buffers.take(1000);
  expect(second).not.toBe(first);
  buffers.giveBack(first);
  expect(buffers.take(1000)).toBe(first);
  expect(buffers.take(1000)).not.toBe(second);
});

test('a Buffer given back serves any later size it can hold, and larger sizes get a new one', () => {
  const buffers = new ResponseBuffers(4, 1024 * 1024);
  const buffer = buffers.take(100_000);
  expect(buffer.length).toBeGreaterThanOrEqual(100_000);
  buffers.giveBack(buffer);
  expect(buffers.take(buffer.length + 1)).not.toBe(buffer);
  expect(buffers.take(10)).toBe(buffer);
});

test('a small answer takes the smallest idle Buffer that fits, leaving the large ones', () => {
  const buffers = new ResponseBuffers(4, 4 * 1024 * 1024);
  const large = buffers.take(2 * 1024 * 1024);
  const small = buffers.take(10);
  buffers.giveBack(large);
  buffers.giveBack(small);
  expect(buffers.take(10)).toBe(small);
  expect(buffers.take(10)).toBe(large);
});

test('what is kept idle stays bounded in count and size, and a Buffer is kept once', () => {
  const buffers = new ResponseBuffers(2, 256 * 1024);
  const large = buffers.take(300 * 1024);
  buffers.giveBack(large);
  expect(buffers.idle).toBe(0);

  const taken = [buffers.take(10), buffers.take(10), buffers.take(10)];
  buffers.giveBack(taken[0]!);
  buffers.giveBack(taken[0]!);
  expect(buffers.idle).toBe(1);
  for (const buffer of taken) buffers.giveBack(buffer);
  expect(buffers.idle).toBe(2);
});
