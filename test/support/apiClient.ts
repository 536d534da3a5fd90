// A small HTTP client for the application API that keeps cookies like a browser would (per
// client, no domain or path matching: every test talks to one host).

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
  bytes: Buffer;
  setCookies: string[];
}

export interface RequestOptions {
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  /** Send this Cookie header instead of the jar's. */
  cookie?: string;
}

export class ApiClient {
  readonly baseUrl: string;
  readonly jar = new Map<string, string>();

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  cookieHeader(): string {
    return [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    const cookie = options.cookie ?? this.cookieHeader();
    if (cookie) headers.cookie = cookie;
    let body = options.body;
    if (options.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(options.json);
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const setCookies = response.headers.getSetCookie();
    for (const line of setCookies) this.store(line);
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString('utf8');
    let parsed: unknown = undefined;
    if (text && (response.headers.get('content-type') ?? '').includes('json')) {
      parsed = JSON.parse(text);
    }
    return {
      status: response.status,
      headers: response.headers,
      body: parsed,
      text,
      bytes,
      setCookies,
    };
  }

  get(path: string, options?: RequestOptions) {
    return this.request('GET', path, options);
  }

  post(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request('POST', path, { ...options, json });
  }

  private store(line: string) {
    const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const expires = attributes.find((a) => a.toLowerCase().startsWith('expires='));
    const expired = expires !== undefined && Date.parse(expires.slice(8)) <= Date.now();
    if (!value || expired) this.jar.delete(name);
    else this.jar.set(name, value);
  }
}

/** Attributes of the Set-Cookie line for `name`, lower-cased, e.g. { httponly: '', path: '/' }. */
export function cookieAttributes(setCookies: string[], name: string) {
  const line = setCookies.find((l) => l.startsWith(`${name}=`));
  if (!line) return undefined;
  const [pair = '', ...rest] = line.split(';').map((part) => part.trim());
  const attributes: Record<string, string> = {};
  for (const part of rest) {
    const [key = '', ...value] = part.split('=');
    attributes[key.toLowerCase()] = value.join('=');
  }
  return { value: pair.slice(name.length + 1), attributes };
}

let counter = 0;

/** Fresh, valid sign-up fields (unique per call within a test file). */
export function newAccount(prefix = 'user') {
  counter += 1;
  const id = `${prefix}${counter}${Math.random().toString(36).slice(2, 7)}`;
  return { email: `${id}@example.com`, username: id, password: 'correct horse battery staple' };
}
