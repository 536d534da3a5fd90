import { expect, test } from '@jest/globals';
import type { IncomingMessage } from 'node:http';
import { forwardedClient, requestClientAddress } from '../../src/shared/http/clientAddress.ts';

const networks = ['10.0.0.0/8', '127.0.0.1/32', 'fd00::/8'];

test('by CIDR: the client is the rightmost X-Forwarded-For entry outside the trusted networks', () => {
  expect(forwardedClient('127.0.0.1', '198.51.100.7, 203.0.113.5, 10.1.2.3', networks)).toBe(
    '203.0.113.5',
  );
  expect(forwardedClient('::ffff:10.9.9.9', '203.0.113.5', networks)).toBe('203.0.113.5');
  expect(forwardedClient('fd00::1', '2001:db8::5, fd00::2', networks)).toBe('2001:db8::5');
});

test('by CIDR: a peer outside the trusted networks is the client, whatever it forwards', () => {
  expect(forwardedClient('203.0.113.9', '198.51.100.7, 10.1.2.3', networks)).toBe('203.0.113.9');
});

test('a client-written entry that is no address stops the walk at the last proxy', () => {
  expect(forwardedClient('127.0.0.1', 'not-an-ip, 10.1.2.3', networks)).toBe('10.1.2.3');
  expect(forwardedClient('127.0.0.1', '', networks)).toBe('127.0.0.1');
});

test('only trusted addresses all the way: the leftmost of them', () => {
  expect(forwardedClient('127.0.0.1', '10.0.0.8, 10.1.2.3', networks)).toBe('10.0.0.8');
});

test('by hop count: the entry that many from the right, never further left', () => {
  expect(forwardedClient('127.0.0.1', '198.51.100.7, 203.0.113.5', 1)).toBe('203.0.113.5');
  expect(forwardedClient('127.0.0.1', '198.51.100.7, 203.0.113.5, 10.1.2.3', 2)).toBe(
    '203.0.113.5',
  );
  expect(forwardedClient('127.0.0.1', '203.0.113.5', 3)).toBe('203.0.113.5');
  expect(forwardedClient('127.0.0.1', '203.0.113.5', 0)).toBe('127.0.0.1');
});

test('a raw request (answered before Koa) gets the address ctx.ip would have', () => {
  const request = (peer: string, forwardedFor?: string) =>
    ({
      socket: { remoteAddress: peer },
      headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    }) as unknown as IncomingMessage;
  expect(requestClientAddress(0)(request('127.0.0.1', '203.0.113.5'))).toBe('127.0.0.1');
  expect(requestClientAddress(1)(request('127.0.0.1', '198.51.100.7, 203.0.113.5'))).toBe(
    '203.0.113.5',
  );
  expect(requestClientAddress(networks)(request('10.1.1.1', '203.0.113.5, 10.1.2.3'))).toBe(
    '203.0.113.5',
  );
  expect(requestClientAddress(1)(request('127.0.0.1'))).toBe('127.0.0.1');
});
