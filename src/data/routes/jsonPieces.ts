import type { Context } from 'koa';
import { ResponseBuffers } from '../../shared/http/responseBuffers.ts';

// Eight idle Buffers of up to 8 MB: room for an answer of 50,000 candles (about 6.5 MB) and for
// several answers at once, while the most kept idle stays bounded.
const bodies = new ResponseBuffers(8, 8 * 1024 * 1024);

/**
 * Answers with a JSON text given in pieces (strings, or UTF-8 Buffers kept by a cache), written
 * into one reused Buffer (see
 * ResponseBuffers) and sent in one write. The Buffer goes back only after the response has
 * finished, that is once the socket has taken every byte; a response cut off before that keeps
 * its Buffer out of reuse.
 */
export function respondWithJsonPieces(
  ctx: Context,
  pieces: ReadonlyArray<string | Buffer>,
  buffers: ResponseBuffers = bodies,
): void {
  const size = pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0);
  const buffer = buffers.take(size);
  let offset = 0;
  for (const piece of pieces) {
    offset +=
      typeof piece === 'string' ? buffer.write(piece, offset, 'utf8') : piece.copy(buffer, offset);
  }
  ctx.type = 'application/json';
  ctx.body = buffer.subarray(0, offset);
  ctx.res.once('finish', () => buffers.giveBack(buffer));
}
