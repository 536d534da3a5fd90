import type Koa from 'koa';
import { listen, type RunningServer } from '../../src/shared/http/server.ts';

export async function serve(app: Koa): Promise<RunningServer> {
  return listen(app, '127.0.0.1', 0);
}

export async function getJson(url: string, token?: string, init: RequestInit = {}) {
  const response = await fetch(url, {
    ...init,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(init.headers ?? {}) },
  });
  const text = await response.text();
  let body: unknown = undefined;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body: body as any, text };
}
