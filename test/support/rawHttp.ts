import { connect } from 'node:net';

// Replays a request exactly as a recorded client sends it: the bytes go out unchanged over one
// TCP connection, and the single answer is read back (Content-Length or chunked, or none).

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

function complete(buffer: Buffer): RawAnswer | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = buffer.subarray(end + 4);
  if (status === 204 || status === 304) rest = Buffer.alloc(0);
  else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length < length) return undefined;
    rest = rest.subarray(0, length);
  } else if (headers['transfer-encoding'] === 'chunked') {
    if (!rest.includes('\r\n0\r\n\r\n') && !rest.subarray(0, 5).equals(Buffer.from('0\r\n\r\n'))) {
      return undefined;
    }
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', at);
      const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
      if (size === 0) break;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    rest = Buffer.concat(parts);
  } else {
    return undefined; // read until the server closes
  }
  const text = rest.toString('utf8');
  let body: unknown;
  if (text && (headers['content-type'] ?? '').includes('json')) body = JSON.parse(text);
  return { status, headers, text, body };
}

/** Sends `request` (a full HTTP/1.1 request, CRLF line ends) to `baseUrl`'s host and port. */
export function replay(baseUrl: string, request: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    const finish = (answer: RawAnswer | undefined) => {
      socket.destroy();
      if (answer) resolve(answer);
      else reject(new Error(`incomplete answer: ${received.toString('latin1').slice(0, 200)}`));
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const answer = complete(received);
      if (answer) finish(answer);
    });
    socket.on('end', () => finish(complete(received)));
    socket.on('error', reject);
    socket.write(request, 'utf8');
  });
}

/**
 * A request as Python's `requests.post(url, json=payload)` sends it (requests 2.31); `body` is
 * what json.dumps made of the payload (", " and ": " separators, floats such as 65000.0).
 */
export function pythonPost(host: string, path: string, body: string): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: python-requests/2.31.0\r\n` +
    'Accept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\n\r\n${body}`
  );
}

/**
 * A request of the Angular front end (HttpClient with credentials) served by its dev server at
 * http://localhost:4200, as Chromium sends it to the API on another port of localhost.
 */
export function angularRequest(
  method: 'GET' | 'POST',
  host: string,
  path: string,
  cookie: string,
  body?: string,
): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${host}`,
    'Connection: keep-alive',
    ...(body === undefined ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]),
    'Accept: application/json, text/plain, */*',
    ...(body === undefined ? [] : ['Content-Type: application/json']),
    'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Origin: http://localhost:4200',
    'Sec-Fetch-Site: same-site',
    'Sec-Fetch-Mode: cors',
    'Sec-Fetch-Dest: empty',
    'Referer: http://localhost:4200/',
    'Accept-Encoding: gzip, deflate, br, zstd',
    'Accept-Language: en-US,en;q=0.9',
    ...(cookie ? [`Cookie: ${cookie}`] : []),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
