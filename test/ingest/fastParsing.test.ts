import { describe, expect, test } from '@jest/globals';
import { toNumber } from '../../src/data/ingest/candleValidation.ts';
import { generalIsoMicros, parseIsoMicros, TimeParser } from '../../src/data/ingest/timeParsing.ts';

// The loader reads times of the canonical ISO form digit by digit and numbers without trim():
// both must accept exactly what the parsers before them accepted, with the same values and the
// same reasons. The reference for times is the general path every form took before
// (generalIsoMicros, unchanged), under TimeParser.parse's old steps below; for numbers, the old
// toNumber, verbatim.

const OLD_EPOCH_TEXT = /^\d+(\.\d+)?$/;

/** The old TimeParser.parse on a fresh parser (no epoch unit fixed yet). */
function oldParse(text: string): number | string {
  const trimmed = text.trim();
  if (trimmed === '') return 'time is empty';
  if (OLD_EPOCH_TEXT.test(trimmed)) return new TimeParser().parseEpoch(Number(trimmed));
  const micros = generalIsoMicros(trimmed);
  return (
    micros ??
    `time '${trimmed.length > 40 ? `${trimmed.slice(0, 40)}…` : trimmed}' is neither ISO 8601 nor an epoch number`
  );
}

function oldToNumber(text: string | number | undefined | null): number {
  if (typeof text === 'number') return text;
  if (text === undefined || text === null) return Number.NaN;
  const trimmed = text.trim();
  return trimmed === '' ? Number.NaN : Number(trimmed);
}

/** Every combination of the parts, joined: dates, clocks, separators, fractions and zones. */
function isoCandidates(): string[] {
  const years = ['0000', '0099', '1969', '2024', '2100', '9999'];
  const months = ['00', '02', '04', '12', '13'];
  const days = ['00', '01', '28', '29', '30', '31', '32'];
  const clocks = ['00:00:00', '23:59:59', '24:00:00', '24:00:01', '23:60:00', '23:00:60', '12:34'];
  const separators = ['T', 't', ' ', '_'];
  const fractions = ['', '.', '.5', '.123', '.123456', '.1234567', '.9999999999999999999', '.x'];
  const zones = ['', 'Z', 'z', ' Z', '+02:00', '-0530', '+02', 'ZZ', ' ', '\n'];
  const out: string[] = [];
  for (const y of years)
    for (const m of months)
      for (const d of days)
        for (const clock of clocks)
          for (const sep of separators)
            for (const fraction of fractions)
              for (const zone of zones) out.push(`${y}-${m}-${d}${sep}${clock}${fraction}${zone}`);
  return out;
}

const ODD_TIMES = [
  '',
  ' ',
  '2024-01-01',
  ' 2024-01-01T00:00:00Z',
  '2024-01-01T00:00:00Z ',
  '\t2024-01-01 00:00:00\n',
  '2024-1-01T00:00:00Z',
  '2024-01-01T0:00:00Z',
  '+2024-01-01T00:00:00Z',
  '２０２４-01-01T00:00:00Z',
  '2024/01/01 00:00:00',
  '2024-01-01T00:00:00.000000000000000000000000000000000000000000001Z',
  '1704067200',
  '1704067200000',
  '1704067200.5',
  'January 1, 2024',
  '2024-01-01T00:00:00-00:00',
];

describe('the canonical ISO form read digit by digit', () => {
  test('accepts exactly what the old parser accepted, with the same value or reason', () => {
    const candidates = [...isoCandidates(), ...ODD_TIMES];
    const differences: Array<{ text: string; now: unknown; old: unknown }> = [];
    let accepted = 0;
    for (const text of candidates) {
      const old = oldParse(text);
      if (typeof old === 'number') accepted++;
      const now = new TimeParser().parse(text);
      if (!Object.is(now, old)) differences.push({ text, now, old });
      const [isoNow, isoOld] = [parseIsoMicros(text), generalIsoMicros(text)];
      if (!Object.is(isoNow, isoOld)) differences.push({ text, now: isoNow, old: isoOld });
    }
    expect(differences).toEqual([]);
    // The comparison covers both outcomes: accepted canonical times and refused ones.
    expect(accepted).toBeGreaterThan(10_000);
    expect(candidates.length - accepted).toBeGreaterThan(10_000);
    // ~470,000 texts, each parsed four ways: 1.7 s on an idle machine; room for a loaded one.
  }, 120_000);

  test('every minute of a leap year and its neighbours lands where Date.parse puts it', () => {
    const from = Date.UTC(2023, 11, 31);
    const to = Date.UTC(2025, 0, 2);
    const wrong: string[] = [];
    for (let ms = from; ms < to; ms += 60_000 * 7 + 1_234) {
      const text = new Date(ms).toISOString();
      if (parseIsoMicros(text) !== ms * 1000) wrong.push(text);
    }
    expect(wrong).toEqual([]);
  });
});

describe('numbers read without trim()', () => {
  const texts = [
    '',
    ' ',
    '\t\n',
    '\u00a0',
    '\ufeff',
    '0',
    ' 0 ',
    '-0',
    '+0',
    '0.0',
    '\u00a00\u00a0',
    '\ufeff0',
    '42000.5',
    ' 42000.5\t',
    '1e3',
    '.5',
    '5.',
    '0x10',
    '0b11',
    'abc',
    '12abc',
    '1_000',
    'Infinity',
    '-Infinity',
    'NaN',
    '1,5',
  ];

  test('the same value (NaN, -0 included) as the old toNumber for every text', () => {
    const differences = [...texts, 7, undefined, null]
      .map((text) => ({ text, now: toNumber(text), old: oldToNumber(text) }))
      .filter(({ now, old }) => !Object.is(now, old));
    expect(differences).toEqual([]);
  });

  test('with a value for blank text, as the volume column had it', () => {
    for (const text of texts) {
      const old = text.trim() === '' ? 0 : oldToNumber(text);
      expect([text, toNumber(text, 0)]).toEqual([text, old]);
    }
  });
});
