/**
 * Reusable Buffers for large response bodies. A body of a megabyte encoded into a fresh Buffer
 * costs little to fill, but every fresh Buffer is memory outside the JavaScript heap that V8
 * counts towards its next full collection: at a few answers a second, the history routes
 * triggered a mark-compact every dozen requests, and its concurrent marking took the cores the
 * database was answering on. A Buffer taken from here is written into, sent, and handed back
 * once the response has finished, so steady traffic allocates no new body memory at all.
 */
export class ResponseBuffers {
  private readonly free: Buffer[] = [];
  private readonly maxKept: number;
  private readonly maxKeptBytes: number;

  /** Keeps at most `maxKept` idle Buffers, none larger than `maxKeptBytes`. */
  constructor(maxKept: number, maxKeptBytes: number) {
    this.maxKept = maxKept;
    this.maxKeptBytes = maxKeptBytes;
  }

  /** A Buffer of at least `size` bytes that no one else holds until it is given back. */
  take(size: number): Buffer {
    // The smallest idle one that fits, so that the large ones stay for large answers.
    let index = -1;
    this.free.forEach((buffer, i) => {
      if (buffer.length >= size && (index < 0 || buffer.length < this.free[index]!.length)) {
        index = i;
      }
    });
    if (index >= 0) return this.free.splice(index, 1)[0]!;
    // Powers of two, so that answers of similar sizes share Buffers.
    let capacity = 64 * 1024;
    while (capacity < size) capacity *= 2;
    return Buffer.allocUnsafeSlow(capacity);
  }

  /** Gives a Buffer back; only once nothing (the socket included) reads it any more. */
  giveBack(buffer: Buffer): void {
    if (buffer.length > this.maxKeptBytes || this.free.length >= this.maxKept) return;
    if (this.free.includes(buffer)) return;
    this.free.push(buffer);
  }

  /** Idle Buffers kept (for tests and diagnostics). */
  get idle(): number {
    return this.free.length;
  }
}
