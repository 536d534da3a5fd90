import { expect, test } from '@jest/globals';
import { createLogger, redactDsn } from '../../src/shared/logger.ts';

function capture() {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  return { logger, text: () => lines.join('') };
}

test('secrets in headers and well-known fields never reach the log', () => {
  const { logger, text } = capture();
  logger.info(
    {
      req: {
        headers: {
          authorization: 'Bearer pdt_secret-token',
          cookie: 'sid=secret-cookie',
          'x-csrf-token': 'csrf-secret',
        },
      },
      res: { headers: { 'set-cookie': 'sid=secret-set-cookie' } },
      body: { password: 'hunter2-secret', token: 'tok-secret' },
      password: 'top-level-secret',
    },
    'request',
  );
  expect(text()).not.toMatch(/secret|hunter2/);
  expect(text()).toContain('[redacted]');
});

test('connection strings are shown without their password', () => {
  expect(redactDsn('postgres://platform:s3cret@db:5432/platform')).toBe(
    'postgres://platform:***@db:5432/platform',
  );
  expect(redactDsn('not a url')).toBe('[unparseable connection string]');
});
