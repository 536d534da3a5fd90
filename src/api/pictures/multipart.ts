import busboy from 'busboy';
import type { Context, Next } from 'koa';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../shared/errors.ts';

export interface UploadedFile {
  buffer: Buffer;
  /** As the client named it: for logs only, never for decisions or paths. */
  filename: string;
}

// Room for the multipart boundaries and part headers around the file itself.
const ENVELOPE_BYTES = 16 * 1024;

/**
 * Reads the one file part `field` of a multipart/form-data request into memory, never more than
 * `maxBytes` of it: a declared Content-Length over the limit is refused before reading, a
 * streamed body as soon as the part passes the limit (the rest is never read: the error handler
 * closes the connection after a 413). Other parts are read and dropped.
 */
export function multipartFile(field: string, maxBytes: number) {
  return async function readMultipartFile(ctx: Context, next: Next) {
    if (!ctx.is('multipart/form-data')) {
      throw new UnsupportedMediaTypeError(
        `Send the picture as multipart/form-data with a part named '${field}'; got ${ctx.get('content-type') || 'no content type'}`,
      );
    }
    const declared = Number(ctx.get('content-length'));
    if (declared > maxBytes + ENVELOPE_BYTES) throw tooLarge(maxBytes);
    const file = await readFilePart(ctx, field, maxBytes);
    // koa-body types the body as JSON; here it carries the file for the route's schema.
    (ctx.request as { body?: unknown }).body = file ? { [field]: file.buffer } : {};
    ctx.state.uploadName = file?.filename;
    await next();
  };
}

function tooLarge(maxBytes: number) {
  return new PayloadTooLargeError(`The picture is larger than the limit of ${maxBytes} bytes`);
}

function readFilePart(
  ctx: Context,
  field: string,
  maxBytes: number,
): Promise<UploadedFile | undefined> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: ctx.req.headers,
        limits: { files: 1, fileSize: maxBytes, fields: 20, fieldSize: 4096, parts: 40 },
      });
    } catch (error) {
      reject(new ValidationError(`Malformed multipart request: ${(error as Error).message}`));
      return;
    }
    let found: UploadedFile | undefined;
    let overLimit = false;
    let parserDone = false;
    let fileStreamsOpen = 0;
    const settle = () => {
      if (!parserDone || fileStreamsOpen > 0) return;
      if (overLimit) reject(tooLarge(maxBytes));
      else resolve(found);
    };
    parser.on('file', (name, stream, info) => {
      fileStreamsOpen++;
      const keep = name === field && !found;
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        if (keep) chunks.push(chunk);
      });
      stream.on('limit', () => {
        if (!keep) return;
        // Refused at once: the rest of the upload is not read (the 413 closes the connection).
        overLimit = true;
        ctx.req.unpipe(parser);
        reject(tooLarge(maxBytes));
      });
      stream.on('error', (error: Error) =>
        reject(new ValidationError(`Malformed multipart request: ${error.message}`)),
      );
      stream.on('end', () => {
        if (keep && !overLimit)
          found = { buffer: Buffer.concat(chunks), filename: info.filename ?? '' };
        fileStreamsOpen--;
        settle();
      });
    });
    parser.on('close', () => {
      parserDone = true;
      settle();
    });
    parser.on('error', (error: Error) =>
      reject(new ValidationError(`Malformed multipart request: ${error.message}`)),
    );
    ctx.req.on('aborted', () => reject(new ValidationError('The upload was interrupted')));
    ctx.req.pipe(parser);
  });
}
