import { Readable } from 'node:stream';
import type { Context } from 'koa';

/**
 * Answers with a JSON text given in pieces, written one after another (with its length, so the
 * client still gets a Content-Length): joining them first would copy the whole body once more.
 */
export function respondWithJsonPieces(ctx: Context, pieces: readonly string[]): void {
  ctx.type = 'application/json';
  ctx.length = pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0);
  ctx.body = Readable.from(pieces);
}
