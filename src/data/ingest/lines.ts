import type { Hash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';

/** Lines of one chunk of input. A line longer than MAX_LINE_LENGTH arrives as null. */
export interface LineBatch {
  lines: Array<string | null>;
  /** 1-based number of the first line in `lines`. */
  firstLine: number;
  bytes: number;
}

/** No price row comes near this; a longer "line" is binary or corrupt input, kept out of memory. */
export const MAX_LINE_LENGTH = 64 * 1024;

/**
 * Splits a byte stream into lines, one batch per chunk read (not one step per line: the per-row
 * cost of async iteration would dominate). Handles a UTF-8 BOM, CRLF, a last line without a
 * newline and multi-byte characters split across chunks. Memory stays bounded by the chunk size.
 */
export async function* readLineBatches(
  chunks: AsyncIterable<Buffer>,
  hash?: Hash,
): AsyncGenerator<LineBatch> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let overlong = false;
  let lineNo = 1;
  let first = true;
  for await (const chunk of chunks) {
    hash?.update(chunk);
    let text = rest + decoder.write(chunk);
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    const lines: Array<string | null> = [];
    const firstLine = lineNo;
    let start = 0;
    let newline = text.indexOf('\n');
    while (newline !== -1) {
      const end = newline > start && text.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      lines.push(overlong ? null : text.slice(start, end));
      overlong = false;
      lineNo++;
      start = newline + 1;
      newline = text.indexOf('\n', start);
    }
    rest = text.slice(start);
    if (rest.length > MAX_LINE_LENGTH) {
      overlong = true;
      rest = '';
    }
    yield { lines, firstLine, bytes: chunk.length };
  }
  const last = rest + decoder.end();
  if (overlong || last.length > 0) {
    const end = last.endsWith('\r') ? last.length - 1 : last.length;
    yield { lines: [overlong ? null : last.slice(0, end)], firstLine: lineNo, bytes: 0 };
  }
}
