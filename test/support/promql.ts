// Just enough PromQL reading to check dashboards and alert rules against the metrics the code
// registers: which metric names an expression selects, with which label matchers, and which
// labels it groups by. Not a parser: it relies on the expressions being well-formed.

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

export interface Selector {
  metric: string;
  /** Label names used in the selector's {…} matchers. */
  matchers: string[];
}

export interface PromqlUse {
  selectors: Selector[];
  /** Label names in by (…), without (…), on (…) and ignoring (…) clauses. */
  grouping: string[];
}

export function readPromql(expr: string): PromqlUse {
  const source = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/'(?:[^'\\]|\\.)*'/g, "''");
  const grouping: string[] = [];
  const withoutGrouping = source.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_all, _keyword: string, labels: string) => {
      grouping.push(
        ...labels
          .split(',')
          .map((l) => l.trim())
          .filter(Boolean),
      );
      return ' ';
    },
  );
  const selectors: Selector[] = [];
  const identifier = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?/g;
  const cleaned = withoutGrouping.replace(/\[[^\]]*\]/g, ' ');
  for (const match of cleaned.matchAll(identifier)) {
    const [whole, name = '', braces] = match;
    const after = cleaned.slice((match.index ?? 0) + whole.length);
    if (/^\s*\(/.test(after) && !braces) continue; // a function or aggregation
    if (KEYWORDS.has(name.toLowerCase()) || name.startsWith('$')) continue;
    const before = cleaned[(match.index ?? 0) - 1] ?? '';
    if (before === '$') continue; // a Grafana variable such as $service
    if (/[0-9.]/.test(before)) continue; // the exponent of a number such as 1e3
    const matchers = braces
      ? [...braces.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!)
      : [];
    selectors.push({ metric: name, matchers });
  }
  return { selectors, grouping };
}
