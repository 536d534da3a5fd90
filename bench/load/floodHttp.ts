// The requests of bench:load --flood's attacker and probe: plain keep-alive GETs over node:http,
// from a chosen loopback source address (FLOOD_ADDRESSES=n spreads the attacker over
// 127.0.0.2 … 127.0.0.(n+1), every one a client address of its own for the API's limits; Linux
// routes all of 127.0.0.0/8 to the loopback device, so no set-up is needed). fetch offers no
// source address; node:http's agent does.
import http from 'node:http';

/** One keep-alive agent per source address (undefined: the system's choice, 127.0.0.1). */
export function agentsFor(addresses: number): http.Agent[] {
  if (addresses <= 0) return [new http.Agent({ keepAlive: true })];
  return Array.from(
    { length: addresses },
    (_, i) => new http.Agent({ keepAlive: true, localAddress: floodAddress(i) }),
  );
}

/** The i-th attacking source address: 127.0.0.2, 127.0.0.3, … (up to 253 of them). */
export function floodAddress(i: number): string {
  if (i < 0 || i > 252) throw new Error(`FLOOD_ADDRESSES allows 1 to 253 addresses, not ${i + 1}`);
  return `127.0.0.${i + 2}`;
}

export interface Answer {
  status: number;
  retryAfter: boolean;
}

/** GET `url` and read its whole body; rejects on a connection error or when `signal` aborts. */
export function get(url: string, agent: http.Agent, signal: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent, signal }, (response) => {
      response.on('data', () => {});
      response.on('error', reject);
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          retryAfter: response.headers['retry-after'] !== undefined,
        }),
      );
    });
    request.on('error', reject);
  });
}

/** The flood's request: two years of minutes at a given interval (uncacheable, slow). */
export function floodUrl(apiUrl: string, intervalSeconds: number): string {
  return `${apiUrl}/api/currency/history/BTC?hours=17520&intervalSeconds=${intervalSeconds}`;
}
