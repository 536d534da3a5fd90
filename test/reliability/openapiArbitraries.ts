import fc from 'fast-check';

// JSON Schema (the subset our zod → OpenAPI 3.1 documents use) → fast-check arbitraries: valid
// values from the schema, and hostile variants (wrong types, missing and extra fields, huge and
// special values) to send where the schema says something else.

export type Schema = Record<string, any>;
export interface OpenApiDocument {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, Schema> };
}

/** Strings that have broken servers before: injection, traversal, encodings, extremes. */
export const HOSTILE_STRINGS = [
  "' OR '1'='1",
  "'; DROP TABLE predictions; --",
  '1; DELETE FROM app.users; --',
  '" OR 1=1 --',
  "BTC' UNION SELECT password_hash FROM app.users --",
  "1' AND pg_sleep(5) IS NULL --",
  '../../../../etc/passwd',
  '..%2f..%2f..%2fetc%2fpasswd',
  '..\\..\\windows\\win.ini',
  '%00',
  '\u0000',
  'a\u0000b',
  'NaN',
  'Infinity',
  '-Infinity',
  '-1',
  '0',
  '-0',
  '1e309',
  '0x1F',
  '1.5',
  '9'.repeat(400),
  '\u{1F600}'.repeat(50),
  '\u202e\u0301\uFEFF',
  '\uD800',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${7*7}',
  '%s%s%n',
  ' ',
  '',
  'null',
  'true',
  '[]',
  '{}',
  'x'.repeat(20_000),
];

export const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 64 }) },
);

/** A JSON value of the wrong kind for almost any field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(
    -1,
    0,
    -0,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER * 1024,
    2 ** 31,
    -(2 ** 63),
    0.1,
    true,
    false,
    null,
    [],
    {},
  ),
  fc.integer(),
  fc.double(),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

export function resolve(doc: OpenApiDocument, schema: Schema | undefined): Schema {
  if (!schema) return {};
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return resolve(doc, doc.components?.schemas?.[name]);
  }
  return schema;
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === 'date-time') {
    return fc
      .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (schema.format === 'uri') return fc.webUrl();
  if (schema.format === 'email') return fc.emailAddress();
  if (typeof schema.pattern === 'string') {
    try {
      return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => {
        const n = s.length;
        return n >= (schema.minLength ?? 0) && n <= (schema.maxLength ?? 200);
      });
    } catch {
      // An expression fast-check cannot invert: fall back to plain strings.
    }
  }
  const minLength = schema.minLength ?? 0;
  return fc.string({
    minLength,
    maxLength: Math.max(minLength, Math.min(schema.maxLength ?? 40, 40)),
  });
}

function numberBounds(schema: Schema) {
  const min =
    schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum : -1e9);
  const max =
    schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum : 1e9);
  return { min: Math.max(min, -1e12), max: Math.min(max, 1e12) };
}

/** Values the schema accepts (as far as the schema alone can say). */
export function valid(
  doc: OpenApiDocument,
  input: Schema | undefined,
  depth = 0,
): fc.Arbitrary<unknown> {
  const schema = resolve(doc, input);
  if (depth > 6) return fc.constant(null);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) {
    return fc.oneof(...alternatives.map((s: Schema) => valid(doc, s, depth + 1)));
  }
  if (Array.isArray(schema.type)) {
    return fc.oneof(
      ...schema.type.map((type: string) => valid(doc, { ...schema, type }, depth + 1)),
    );
  }
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const { min, max } = numberBounds(schema);
      return fc.integer({
        min: Math.ceil(Math.max(min, -(2 ** 31))),
        max: Math.floor(Math.min(max, 2 ** 31 - 1)),
      });
    }
    case 'number': {
      const { min, max } = numberBounds(schema);
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    }
    case 'string':
      return stringArbitrary(schema);
    case 'array':
      return fc.array(valid(doc, schema.items, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 4, 4)),
      });
    case 'object': {
      const properties: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, property] of Object.entries(properties))
        model[key] = valid(doc, property, depth + 1);
      return fc.record(model, { requiredKeys: [...required].filter((k) => k in model) });
    }
    default:
      return fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean());
  }
}

/** A valid value broken in one place: a field dropped, added or given a hostile value. */
export function mutated(doc: OpenApiDocument, input: Schema | undefined): fc.Arbitrary<unknown> {
  const schema = resolve(doc, input);
  const base = valid(doc, schema);
  const breakOne = base.chain((value) => {
    if (Array.isArray(value)) {
      return fc.oneof(
        fc.constant([...value, null]),
        hostileValue.map((bad) => [bad, ...value]),
        fc.constant(value.length ? value.map(() => 'x') : [{}]),
      );
    }
    if (value === null || typeof value !== 'object') return hostileValue;
    const keys = Object.keys(value);
    const choices: fc.Arbitrary<unknown>[] = [
      fc
        .tuple(hostileString, hostileValue)
        .map(([key, bad]) => ({ ...value, [key || 'extra']: bad })),
    ];
    if (keys.length) {
      choices.push(
        fc.constantFrom(...keys).map((key) => {
          const copy: Record<string, unknown> = { ...value };
          delete copy[key];
          return copy;
        }),
        fc
          .tuple(fc.constantFrom(...keys), hostileValue)
          .map(([key, bad]) => ({ ...value, [key]: bad })),
      );
    }
    return fc.oneof(...choices);
  });
  return fc.oneof({ weight: 4, arbitrary: breakOne }, { weight: 1, arbitrary: hostileValue });
}
