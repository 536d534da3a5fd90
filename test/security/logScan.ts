import { readFileSync } from 'node:fs';

/** Secrets that must never appear in a log, whatever their value: patterns of our formats. */
export const SECRET_PATTERNS: [string, RegExp][] = [
  ['a data token', /pdt_[A-Za-z0-9_-]{16,}/],
  ['a session cookie', /\bsid=[A-Za-z0-9_.-]{16,}/],
  ['a CSRF cookie', /csrf-token=[A-Za-z0-9_-]{16,}/],
  ['the test password', /correct horse battery staple/],
  ['a password field', /"password"\s*:\s*"(?!\[redacted\])/],
];

/** What in `text` looks like a secret, with the literal values given also searched for. */
export function findSecrets(text: string, literals: string[] = []): string[] {
  const found: string[] = [];
  for (const [what, pattern] of SECRET_PATTERNS) {
    const match = pattern.exec(text);
    if (match)
      found.push(`${what}: …${text.slice(Math.max(0, match.index - 80), match.index + 80)}…`);
  }
  for (const literal of literals) {
    const at = text.indexOf(literal);
    if (literal.length >= 8 && at >= 0) {
      found.push(`"${literal.slice(0, 6)}…": …${text.slice(Math.max(0, at - 80), at + 80)}…`);
    }
  }
  return found;
}

export function findSecretsInFile(path: string, literals: string[] = []): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return findSecrets(text, literals);
}
