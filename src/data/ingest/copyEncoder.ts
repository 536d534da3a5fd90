import type { Candle } from './types.ts';

// PostgreSQL's binary COPY format: the server neither parses numbers nor timestamps, which keeps
// the database side of a load cheaper than text COPY (psql's \copy). Rows are packed into large
// buffers: one stream write per row would cost more than the rows themselves.

/** Column order of a COPY into price_observations. */
export const COPY_COLUMNS = '(currency_code, time, open, high, low, close, volume, source)';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
export const PG_EPOCH_US = 946_684_800_000_000;
export const TWO_32 = 4_294_967_296;
/** Upper bound of one encoded row: codes are ≤ 15 ASCII bytes, sources short. */
const MAX_ROW_BYTES = 512;

export const DEFAULT_CHUNK_BYTES = 512 * 1024;

export class BinaryCopyEncoder {
  private readonly source: Buffer;
  private readonly chunkBytes: number;
  private buffer: Buffer;
  private offset: number;

  constructor(source: string, chunkBytes = DEFAULT_CHUNK_BYTES) {
    this.source = Buffer.from(source, 'utf8');
    if (this.source.length > 128) throw new Error('source label too long');
    this.chunkBytes = chunkBytes;
    this.buffer = Buffer.allocUnsafe(chunkBytes);
    SIGNATURE.copy(this.buffer, 0);
    this.buffer.writeInt32BE(0, 11); // flags
    this.buffer.writeInt32BE(0, 15); // header extension length
    this.offset = 19;
  }

  /** True when the buffer should be handed to the stream before more rows are added. */
  get full(): boolean {
    return this.offset > this.chunkBytes - MAX_ROW_BYTES;
  }

  /** Encodes one row. */
  add(c: Candle): void {
    const b = this.buffer;
    let o = this.offset;
    b.writeInt16BE(8, o);
    o += 2;
    const codeLength = b.write(c.code, o + 4, 'latin1');
    b.writeInt32BE(codeLength, o);
    o += 4 + codeLength;
    b.writeInt32BE(8, o);
    const pgMicros = c.timeUs - PG_EPOCH_US;
    const high = Math.floor(pgMicros / TWO_32);
    b.writeInt32BE(high, o + 4);
    b.writeUInt32BE(pgMicros - high * TWO_32, o + 8);
    o += 12;
    o = writeFloat(b, o, c.open);
    o = writeFloat(b, o, c.high);
    o = writeFloat(b, o, c.low);
    o = writeFloat(b, o, c.close);
    o = writeFloat(b, o, c.volume);
    b.writeInt32BE(this.source.length, o);
    this.source.copy(b, o + 4);
    o += 4 + this.source.length;
    this.offset = o;
  }

  /** Hands over what has been encoded so far and starts a fresh buffer. */
  take(): Buffer {
    const out = this.buffer.subarray(0, this.offset);
    this.buffer = Buffer.allocUnsafe(this.chunkBytes);
    this.offset = 0;
    return out;
  }

  /** The last bytes of the stream: whatever is buffered plus the trailer. */
  finish(): Buffer {
    this.buffer.writeInt16BE(-1, this.offset);
    this.offset += 2;
    return this.take();
  }
}

function writeFloat(b: Buffer, o: number, value: number): number {
  b.writeInt32BE(8, o);
  b.writeDoubleBE(value, o + 4);
  return o + 12;
}
