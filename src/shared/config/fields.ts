import { z } from 'zod';

// Value types that several configuration sections share. Environment variables are strings: these
// turn them into what the code uses, with the message a bad value gets.

export const booleanFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const port = z.coerce.number().int().min(0).max(65535);
export const positiveInt = z.coerce.number().int().min(1);
export const positiveNumber = z.coerce.number().positive();

/** A comma-separated list, trimmed, empty entries dropped. */
export const commaList = z.string().transform((s) =>
  s
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean),
);

export const cidrList = commaList.pipe(z.array(z.union([z.cidrv4(), z.cidrv6()])));
