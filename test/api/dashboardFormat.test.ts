// The dashboard's number formatting: what the markets table shows and how it colours it.
import { describe, expect, test } from '@jest/globals';

// The dashboard's modules are plain browser JavaScript without type declarations.
const formatModule: string = '../../src/api/public/format.js';
const { percent, trend } = (await import(formatModule)) as {
  percent: (value: number) => string;
  trend: (value: number) => string;
};

describe('dashboard percentages', () => {
  test('a change is shown with two decimals and a sign, never as "-0.00"', () => {
    expect(percent(1.234)).toBe('+1.23 %');
    expect(percent(-1.236)).toBe('-1.24 %');
    expect(percent(-0.001)).toBe('0.00 %');
    expect(percent(Number.NaN)).toBe('');
  });

  test('a change is coloured by the figure shown, so "0.00 %" is neither up nor down', () => {
    expect(trend(0.5)).toBe('up');
    expect(trend(-0.5)).toBe('down');
    expect(trend(-0.001)).toBe('');
    expect(trend(0.004)).toBe('');
    expect(trend(-0.005)).toBe('down');
    expect(trend(Number.NaN)).toBe('');
  });
});
