import type { PriceRequest, PriceSource } from './types.ts';

// An offline market: every currency follows a geometric random walk whose path is a pure function
// of (seed, code, second). Any worker, before or after a restart, computes the same price for the
// same instant, so the series stays continuous however the cycles are spread over processes and
// there is no state to keep or reload.
//
// The walk is a Brownian bridge built top-down over segments of 2^25 s (~388 days), pinned to the
// currency's reference price at both ends: the value at second t takes 25 halvings, each adding
// one hashed Gaussian. Increments over short spans have the variance of a plain Brownian motion
// (the requested volatility); over months the pinning keeps prices near their reference level.

const SEGMENT_SECONDS = 2 ** 25;
const SECONDS_PER_YEAR = 365.25 * 86_400;

// Approximate USD prices of large currencies (late 2025), so the simulated market looks familiar.
const REFERENCE_PRICES: Record<string, number> = {
  BTC: 95_000,
  ETH: 3_300,
  XRP: 2.2,
  BNB: 900,
  SOL: 180,
  DOGE: 0.2,
  TRX: 0.3,
  ADA: 0.7,
  LINK: 20,
  AVAX: 25,
  XLM: 0.35,
  SUI: 3.5,
  BCH: 500,
  HBAR: 0.2,
  LTC: 100,
  TON: 3,
  SHIB: 0.000013,
  DOT: 4,
  XMR: 300,
  UNI: 8,
  PEPE: 0.00001,
  AAVE: 250,
  APT: 5,
  NEAR: 2.5,
  ICP: 5,
  ETC: 18,
  ONDO: 0.9,
  POL: 0.25,
  KAS: 0.08,
  TAO: 400,
  ATOM: 4.5,
  FIL: 2.5,
  ARB: 0.4,
  OP: 0.7,
  MKR: 1_500,
  ZEC: 60,
  DASH: 25,
  COMP: 45,
  YFI: 5_500,
};
const STABLECOINS = new Set(['USDT', 'USDC', 'DAI', 'FDUSD', 'TUSD', 'USDE', 'PYUSD', 'USDS']);

/** Annualised volatility: majors calmer than the rest, dollar-pegged coins nearly still. */
function annualVolatility(code: string, key: number): number {
  if (STABLECOINS.has(code)) return 0.005;
  if (code === 'BTC') return 0.5;
  if (code === 'ETH') return 0.65;
  return 0.6 + 0.25 * unit(mix(key ^ 0x5bd1e995));
}

/** Reference price: the table's, 1 for stablecoins, else a stable pseudo-price from $0.01 to $100. */
function referencePrice(code: string, key: number): number {
  if (STABLECOINS.has(code)) return 1;
  const known = REFERENCE_PRICES[code];
  if (known !== undefined) return known;
  return Number((10 ** (-2 + 4 * unit(mix(key ^ 0x27d4eb2f)))).toPrecision(4));
}

interface Walk {
  key: number;
  reference: number;
  /** Volatility of the log price per square-root second. */
  sigma: number;
}

export interface SimulatedMarket {
  /** The price of `code` at `at` (resolution one second). */
  priceAt(code: string, at: Date): number;
  /**
   * Prices of `code` at many instants (Unix seconds, ascending), each exactly `priceAt`'s: the
   * halvings the instants share are computed once, so a day sampled every few seconds costs a
   * few Gaussians per instant instead of 25 (what makes loading weeks of history quick).
   */
  pricesAt(code: string, seconds: Float64Array): Float64Array;
  annualVolatility(code: string): number;
}

export function createSimulatedMarket(seed: string): SimulatedMarket {
  const seedKey = hashString(seed);
  const walks = new Map<string, Walk>();
  const walkOf = (code: string): Walk => {
    let walk = walks.get(code);
    if (!walk) {
      const key = mix(seedKey ^ hashString(code));
      const annual = annualVolatility(code, hashString(code));
      const reference = referencePrice(code, hashString(code));
      walk = { key, reference, sigma: annual / Math.sqrt(SECONDS_PER_YEAR) };
      walks.set(code, walk);
    }
    return walk;
  };
  return {
    priceAt(code, at) {
      const walk = walkOf(code);
      const second = Math.floor(at.getTime() / 1000);
      const price = walk.reference * Math.exp(walk.sigma * bridgeAt(walk.key, second));
      return Number(price.toPrecision(10));
    },
    pricesAt(code, seconds) {
      const walk = walkOf(code);
      const out = new Float64Array(seconds.length);
      bridgeMany(walk.key, seconds, out);
      for (let i = 0; i < out.length; i++) {
        out[i] = Number((walk.reference * Math.exp(walk.sigma * out[i]!)).toPrecision(10));
      }
      return out;
    },
    annualVolatility: (code) => walkOf(code).sigma * Math.sqrt(SECONDS_PER_YEAR),
  };
}

export function createSimulatedSource(seed: string): PriceSource {
  const market = createSimulatedMarket(seed);
  return {
    name: 'simulated',
    async fetchPrices({ codes, at }: PriceRequest) {
      return new Map(codes.map((code) => [code, market.priceAt(code, at)]));
    },
  };
}

/** Standard Brownian bridge (0 at both ends of each segment) at an integer second. */
function bridgeAt(key: number, second: number): number {
  const segment = Math.floor(second / SEGMENT_SECONDS);
  const offset = second - segment * SEGMENT_SECONDS;
  const segmentKey = mix(key ^ mix(segment ^ 0x632be5ab));
  let lo = 0;
  let hi = SEGMENT_SECONDS;
  let wLo = 0;
  let wHi = 0;
  while (offset !== lo) {
    const length = hi - lo;
    const mid = lo + length / 2;
    // Heap numbering names each node of the halving tree uniquely within the segment.
    const node = SEGMENT_SECONDS / length + lo / length;
    const wMid = (wLo + wHi) / 2 + (Math.sqrt(length) / 2) * gaussian(mix(segmentKey ^ mix(node)));
    if (offset < mid) {
      hi = mid;
      wHi = wMid;
    } else {
      lo = mid;
      wLo = wMid;
    }
  }
  return wLo;
}

/** `bridgeAt` for ascending integer seconds at once, into `out`: one walk down the shared tree. */
function bridgeMany(key: number, seconds: Float64Array, out: Float64Array): void {
  for (let i = 0; i < seconds.length;) {
    const segment = Math.floor(seconds[i]! / SEGMENT_SECONDS);
    const base = segment * SEGMENT_SECONDS;
    let j = i;
    while (j < seconds.length && seconds[j]! - base < SEGMENT_SECONDS) j++;
    const segmentKey = mix(key ^ mix(segment ^ 0x632be5ab));
    descend({ segmentKey, base, seconds, out }, i, j, 0, SEGMENT_SECONDS, 0, 0);
    i = j;
  }
}

interface Descent {
  segmentKey: number;
  base: number;
  seconds: Float64Array;
  out: Float64Array;
}

/** Points [i, j) lie in [lo, hi) of the segment; the same arithmetic as `bridgeAt`, node by node. */
function descend(
  d: Descent,
  i: number,
  j: number,
  lo: number,
  hi: number,
  wLo: number,
  wHi: number,
) {
  while (i < j && d.seconds[i]! - d.base === lo) d.out[i++] = wLo;
  if (i === j) return;
  const length = hi - lo;
  const mid = lo + length / 2;
  const node = SEGMENT_SECONDS / length + lo / length;
  const wMid = (wLo + wHi) / 2 + (Math.sqrt(length) / 2) * gaussian(mix(d.segmentKey ^ mix(node)));
  let k = i;
  while (k < j && d.seconds[k]! - d.base < mid) k++;
  descend(d, i, k, lo, mid, wLo, wMid);
  descend(d, k, j, mid, hi, wMid, wHi);
}

/** A standard normal deviate from a 32-bit hash (Box–Muller on two derived uniforms). */
function gaussian(hash: number): number {
  const u1 = unit(mix(hash ^ 0x68e31da4));
  const u2 = unit(mix(hash ^ 0xb5297a4d));
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** (0, 1), never 0 so the logarithm above stays finite. */
function unit(hash: number): number {
  return (hash + 0.5) / 2 ** 32;
}

/** MurmurHash3's finaliser: a good 32-bit mixer. */
function mix(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over the UTF-16 code units. */
function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
