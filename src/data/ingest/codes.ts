import { clip } from './timeParsing.ts';
import { codeFromSymbol } from './symbols.ts';

export type CodeResolution =
  { code: string; reason?: undefined } | { code?: undefined; reason: string };

const CODE = /^[A-Z0-9]{1,15}$/;
const CACHE_LIMIT = 10_000;

/**
 * Maps the code (or pair symbol) of each row to a known currency. The table has no foreign key
 * (it would cost a lookup per row inside COPY), so codes are checked here, against the currency
 * list read once per load, with each distinct spelling resolved once.
 */
export class CodeResolver {
  private readonly known: ReadonlySet<string>;
  private readonly cache = new Map<string, CodeResolution>();

  constructor(known: ReadonlySet<string>) {
    this.known = known;
  }

  resolve(raw: string): CodeResolution {
    let hit = this.cache.get(raw);
    if (hit) return hit;
    hit = this.compute(raw);
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(raw, hit);
    return hit;
  }

  private compute(raw: string): CodeResolution {
    const code = raw.trim().toUpperCase();
    if (code === '') return { reason: 'code is empty' };
    if (!CODE.test(code)) return { reason: `code '${clip(raw)}' is not 1 to 15 letters or digits` };
    if (this.known.has(code)) return { code };
    const base = codeFromSymbol(code);
    if (base && this.known.has(base)) return { code: base };
    return { reason: `unknown currency '${code}'` };
  }
}
