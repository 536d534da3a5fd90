import net from 'node:net';

// A client that streams a chunked request body as fast as the server takes it, and stops as soon
// as an answer arrives: to see how much of an oversized upload a server reads before refusing it.

export interface CutOffOutcome {
  /** Status of the answer, or 0 when the connection closed without one. */
  status: number;
  /** The answer's status line and headers, lowercased. */
  head: string;
  /** Body bytes the client had handed to the connection when the answer (or the close) came. */
  bytesSent: number;
  /** Whether the server closed the connection after answering. */
  closed: boolean;
}

export interface ChunkedUpload {
  url: string;
  path: string;
  headers: Record<string, string>;
  /** Sent once, before the filler (a multipart part header, say). */
  prefix?: string;
  /** How much filler the client would send if nobody stopped it. */
  totalBytes: number;
}

/** How long the server may take to close the connection after answering (generous, for load). */
const CLOSE_DEADLINE_MS = 30_000;

const CHUNK = Buffer.alloc(64 * 1024, 'a');

function frame(bytes: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`${bytes.length.toString(16)}\r\n`),
    bytes,
    Buffer.from('\r\n'),
  ]);
}

export function streamChunked(upload: ChunkedUpload): Promise<CutOffOutcome> {
  const { hostname, port } = new URL(upload.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let received = '';
    let answeredAt: number | undefined;
    let sent = 0;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      const head = received.split('\r\n\r\n')[0]!.toLowerCase();
      const status = Number(/^http\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      socket.destroy();
      resolve({ status, head, bytesSent: answeredAt ?? sent, closed });
    };
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      if (answeredAt !== undefined) return;
      answeredAt = sent;
      // A server that keeps the connection after refusing has not cut the upload off.
      setTimeout(() => finish(false), CLOSE_DEADLINE_MS).unref();
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    const sendAll = async () => {
      const lines = [
        `POST ${upload.path} HTTP/1.1`,
        `host: ${hostname}:${port}`,
        'transfer-encoding: chunked',
        ...Object.entries(upload.headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upload.prefix) socket.write(frame(Buffer.from(upload.prefix)));
      while (answeredAt === undefined && !socket.destroyed && sent < upload.totalBytes) {
        sent += CHUNK.length;
        if (!socket.write(frame(CHUNK))) {
          await new Promise((drained) => {
            socket.once('drain', drained);
            socket.once('close', drained);
          });
        }
      }
      // The whole body went through without an answer: end it and see what comes back.
      if (answeredAt === undefined && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    socket.on('connect', () => void sendAll());
  });
}
