import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { chromium, type Browser, type Page } from 'playwright-core';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService } from '../../src/api/service.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { startWorker, type Worker } from '../../src/worker/start.ts';
import { TEST_SESSION_KEY } from '../support/api.ts';
import { newAccount } from '../support/apiClient.ts';
import { DEBIAN_CHROMIUM, ensureChromium } from '../support/chromium.ts';
import { serve } from '../support/http.ts';
import { noisePng } from '../support/images.ts';
import { listenToTicks } from '../support/priceTicks.ts';
import { eventually } from '../support/wait.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// The dashboard in a real browser: headless Chromium (Debian's `chromium` package, driven by
// playwright-core) against the whole platform: data module, a worker harvesting the simulated
// market every second, and the API with its live gateway. Screenshots go to test-artifacts/.
// Chromium missing: installed from Debian's package as root on Debian (test/support/chromium.ts);
// elsewhere this fails with the command to run, unless SKIP_BROWSER_TESTS=1 says to skip it.

const CHROMIUM = process.env.CHROMIUM_PATH ?? DEBIAN_CHROMIUM;
const skip = process.env.SKIP_BROWSER_TESTS === '1';
const ARTIFACTS = 'test-artifacts';
const DESKTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };

let runtime: TestRuntime;
let data: RunningServer;
let api: RunningServer;
let service: ReturnType<typeof createApiService>;
let worker: Worker;
let browser: Browser;
let page: Page;
const problems: string[] = [];

const describeBrowser = skip ? describe.skip : describe;

describeBrowser('the dashboard in Chromium', () => {
  // A first install downloads the browser: minutes on a slow mirror, once per machine.
  beforeAll(() => ensureChromium(CHROMIUM), 15 * 60_000);

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    runtime = await createTestRuntime({
      HARVEST_INTERVAL_SECONDS: '1',
      SESSION_KEYS: TEST_SESSION_KEY,
    });
    await generateCurrencies({
      pool: runtime.pool,
      logger: runtime.logger,
      loadFromExchange: false,
    });
    const { token } = await createToken(runtime.pool, 'api', ['read']);
    data = await serve(createDataService(runtime).app);
    service = createApiService(runtime, { dataUrl: data.url, dataToken: token });
    api = await serve(service.app);
    service.live.attach(api.server);
    const ticks = await listenToTicks(runtime.database.url);
    worker = await startWorker(runtime);
    await ticks.waitFor(2, 30_000); // prices exist before the page opens
    await ticks.close();

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: DESKTOP });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await service?.live.close();
    await api?.close(1000);
    await data?.close(1000);
    await runtime?.dispose();
  }, 60_000);

  test('sign up, live prices, a chart, a holding valued live, a profile picture', async () => {
    try {
      await walkThrough();
    } catch (error) {
      // What the person saw, for the failure report.
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-failure.png` }).catch(() => {});
      const toasts = await page
        .locator('#toasts')
        .innerText()
        .catch(() => '');
      throw new Error(`${String(error)}\nshown: ${toasts}\nbrowser: ${problems.join('; ')}`, {
        cause: error,
      });
    }
  }, 120_000);
});

async function walkThrough() {
  {
    await page.goto(api.url);
    await page.locator('#connection', { hasText: 'Live' }).waitFor({ timeout: 15_000 });

    // Prices move in the table without reloading.
    const btcPrice = page.locator('#price-table tr[data-code="BTC"] .value');
    await btcPrice.waitFor();
    const firstPrice = await btcPrice.textContent();
    await eventually(
      async () => (await btcPrice.textContent()) !== firstPrice,
      15_000,
      'a price move',
    );

    await checkDayChange('BTC');
    await checkDayChange('ETH');
    await checkLogo('BTC');
    await checkKeyboard();
    await checkMarkets();

    // Sign up.
    const account = newAccount('e2e');
    await page.getByRole('button', { name: 'Create account' }).first().click();
    const signup = page.locator('#signup-form');
    await signup.locator('input[name=email]').fill(account.email);
    await signup.locator('input[name=username]').fill(account.username);
    await signup.locator('input[name=password]').fill(account.password);
    await signup.getByRole('button', { name: 'Create account' }).click();
    await page.locator('#username', { hasText: account.username }).waitFor();

    // A chart of a chosen currency at a chosen resolution, extended live.
    await page.selectOption('#chart-code', 'ETH');
    await page.selectOption('#chart-range', '1:60');
    await page.locator('#chart-title', { hasText: 'ETH' }).waitFor();
    await page.locator('#chart canvas').first().waitFor();
    await eventually(() => page.locator('#chart-empty').isHidden(), 15_000, 'chart points');
    await checkCandles('ETH');

    // A holding whose value follows the market.
    await page.selectOption('#add-code', 'BTC');
    await page.locator('#add-form input[name=shares]').fill('0.5');
    await page.locator('#add-form input[name=walletDollars]').fill('100');
    await page.getByRole('button', { name: 'Add holding' }).click();
    await page.locator('#holdings-table tr[data-code="BTC"]').waitFor();
    const worth = page.locator('#total-worth');
    const firstWorth = await worth.textContent();
    expect(firstWorth).toMatch(/^\$[\d,]+\.\d\d$/);
    await eventually(
      async () => (await worth.textContent()) !== firstWorth,
      15_000,
      'worth moving',
    );

    await checkPortfolio();

    // A profile picture.
    await page.locator('#picture').setInputFiles({
      name: 'me.png',
      mimeType: 'image/png',
      buffer: await noisePng(200, 200),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('#avatar').waitFor({ state: 'visible' });
    await eventually(
      async () =>
        (await page.locator('#avatar').evaluate((img: any) => img.naturalWidth as number)) > 0,
      10_000,
      'the picture shown',
    );

    // A mistake is shown to the person, not swallowed.
    await page.locator('#add-form input[name=shares]').fill('-1000');
    await page.getByRole('button', { name: 'Add holding' }).click();
    await page.locator('.toast-error', { hasText: /only|below|more than/i }).waitFor();

    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-desktop.png`, fullPage: true });

    const contrast = await lowContrastTexts();
    expect(contrast.bad).toEqual([]);
    expect(contrast.checked).toBeGreaterThan(50);

    await checkPhone();

    // Sign out.
    await page.setViewportSize(DESKTOP);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#portfolio-signed-out').waitFor({ state: 'visible' });

    // The expected 422 of the refused removal is the only error the browser reported.
    // The 401 of isloggedin while signed out and the 422 of the refused removal are expected.
    // 429: the sparklines of an anonymous visitor reach the history routes' rate limit; the
    // table pauses them and carries on (the rest of the walk-through shows it working).
    expect(problems.filter((p) => !/\b(401|422|429)\b/.test(p))).toEqual([]);
  }
}

/** The rendered 24-hour change is the API's: change24h against the same opening price. */
async function checkDayChange(code: string) {
  const listed = (await (await fetch(`${api.url}/api/currency/all`)).json()) as {
    currencies: { currencyCode: string; value: number; open24h: number; change24h: number }[];
  };
  const quote = listed.currencies.find((c) => c.currencyCode === code)!;
  expect(quote.open24h).toBeGreaterThan(0);
  expect(quote.change24h).toBeCloseTo(((quote.value - quote.open24h) / quote.open24h) * 100, 6);
  // Price and change read together (a live price may arrive between two reads).
  const row = page.locator(`#price-table tr[data-code="${code}"]`);
  const shown = (await row.evaluate((e: any) => [
    e.querySelector('.value').textContent,
    e.querySelector('.change').textContent,
  ])) as [string, string];
  const shownPrice = Number(shown[0].replace(/[$,]/g, ''));
  const shownChange = Number(shown[1].replace(/[%\s+]/g, ''));
  const expected = ((shownPrice - quote.open24h) / quote.open24h) * 100;
  // The price is shown to the cent: the change can differ from the exact one by that much.
  const centsError = (0.005 / quote.open24h) * 100;
  expect(Math.abs(shownChange - expected)).toBeLessThanOrEqual(0.005 + centsError + 1e-9);
  // And it is the day's change, not a change since the page opened (open24h is older).
  expect(Math.abs(shownChange - quote.change24h)).toBeLessThan(5);
}

/** The icon the API names is served and drawn. */
async function checkLogo(code: string) {
  const img = page.locator(`#price-table tr[data-code="${code}"] img.logo`);
  await eventually(
    async () => (await img.evaluate((e: any) => e.complete && e.naturalWidth)) > 0,
    15_000,
    `the ${code} logo`,
  );
  const src = (await img.getAttribute('src'))!;
  const answer = await fetch(new URL(src, api.url));
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toBe('image/svg+xml');
  // A code the icon set lacks gets its generic coin rather than a broken picture.
  expect((await fetch(`${api.url}/assets/cryptofont/zzzunknown.svg`)).status).toBe(200);
}

/** Candles through the API; the crosshair readout; the current candle following live prices. */
async function checkCandles(code: string) {
  const url = `${api.url}/api/currency/candles/${code}?hours=1&intervalSeconds=60&tz=Europe/Berlin`;
  const answer = await fetch(url);
  expect(answer.status).toBe(200);
  const candles = (await answer.json()) as {
    timestamp: string;
    open: number;
    high: number;
    low: number;
    close: number;
    volume: number;
  }[];
  expect(candles.length).toBeGreaterThan(0);
  for (const c of candles) {
    expect(c.high).toBeGreaterThanOrEqual(Math.max(c.open, c.close, c.low));
    expect(c.low).toBeLessThanOrEqual(Math.min(c.open, c.close));
  }
  const refused = (path: string) => fetch(`${api.url}/api/currency/candles/${path}`);
  expect((await refused(`${code}?hours=1&intervalSeconds=7200`)).status).toBe(400);
  expect((await refused(`${code}?tz=Mars/Olympus`)).status).toBe(400);
  expect((await refused('NOPE?hours=1')).status).toBe(404);

  // Hovering a candle reads out its time, open, high, low, close and volume.
  const readout = page.locator('#chart-readout');
  const box = (await page.locator('#chart').boundingBox())!;
  await eventually(
    async () => {
      for (let x = 0.98; x > 0.05; x -= 0.04) {
        await page.mouse.move(box.x + box.width * x, box.y + box.height * 0.4);
        if ((await readout.getAttribute('data-source')) === 'crosshair') return true;
      }
      return false;
    },
    15_000,
    'a candle under the crosshair',
  );
  expect(await readout.innerText()).toMatch(
    /O\s*\$[\d,.]+\s*H\s*\$[\d,.]+\s*L\s*\$[\d,.]+\s*C\s*\$[\d,.]+\s*V\s*[\d.]+/,
  );
  // Away from the chart it shows the current candle, whose close follows live prices.
  await page.mouse.move(0, 0);
  await page.locator('#chart-readout[data-source="latest"]').waitFor();
  const close = async () => /C (\$[\d,.]+)/.exec(await readout.innerText())?.[1];
  const firstClose = await close();
  await eventually(async () => (await close()) !== firstClose, 20_000, 'the current candle moving');
  expect(await page.locator('#chart-price').innerText()).toBe(await close());
}

/** Profit per asset and in all as the API counts it, allocation, worth over time. */
async function checkPortfolio() {
  const row = page.locator('#holdings-table tr[data-code="BTC"]');
  await eventually(
    async () => /\$/.test(await row.locator('.profit').innerText()),
    15_000,
    'the BTC profit',
  );
  // What the holding cost (value − profit) is the same on the page and in the API.
  const fromApi = await page.evaluate<{
    value: number;
    profit: number;
    total: number;
  }>(`(async () => {
    const get = (path) => fetch(path).then((r) => r.json());
    const btcValue = async () =>
      (await get('/api/portfolio/get')).assets.find((a) => a.currencyCode === 'BTC')
        .sharesValueInDollars;
    // Live prices move: the profits count only if BTC's value is the same before and after them.
    for (let attempt = 0; ; attempt++) {
      const value = await btcValue();
      const [profit, total] = await Promise.all([
        get('/api/portfolio/history/profit/BTC'),
        get('/api/portfolio/history/profit'),
      ]);
      if ((await btcValue()) === value || attempt >= 9) {
        return { value, profit: profit.value, total: total.value };
      }
    }
  })()`);
  expect(fromApi.total).toBeCloseTo(fromApi.profit, 6);
  const shown = await page.evaluate<string[]>(`(() => {
    const row = document.querySelector('#holdings-table tr[data-code="BTC"]');
    return [
      row.querySelector('.value').textContent,
      row.querySelector('.profit').textContent,
      row.querySelector('.share').textContent,
      document.querySelector('#total-worth').textContent,
      document.querySelector('#total-profit').textContent,
    ];
  })()`);
  const money = (text: string) => {
    const [, sign, digits] = /^([+−-]?)\$([\d,.]+)/.exec(text)!;
    return (sign === '−' || sign === '-' ? -1 : 1) * Number(digits!.replace(/,/g, ''));
  };
  const [value, profit, share, worth, totalProfit] = shown as [
    string,
    string,
    string,
    string,
    string,
  ];
  const apiCost = fromApi.value - fromApi.profit;
  // value includes the holding's $100 of cash: the shares' value is value − 100.
  expect(Math.abs(money(value) - 100 - money(profit) - apiCost)).toBeLessThan(0.02);
  expect(money(totalProfit)).toBeCloseTo(money(profit), 1);
  expect(Number(share.replace(/[%\s]/g, ''))).toBeCloseTo(
    ((money(value) - 100) / money(worth)) * 100,
    0,
  );
  await page.locator('#allocation').waitFor();
  expect(await page.locator('#allocation .slice').count()).toBe(2); // BTC and cash
  await page.locator('#worth-chart canvas').first().waitFor();
  await eventually(() => page.locator('#worth-empty').isHidden(), 15_000, 'worth over time');
}

/** The visible rows' cells of one column, read in one go (live prices reorder rows). */
function column(selector: string) {
  return page.evaluate<string[]>(`[...document.querySelectorAll('#price-table tbody tr')]
    .filter((row) => !row.hidden)
    .map((row) => row.querySelector('${selector}').textContent)`);
}

const amount = (text: string) => Number(text.replace(/[$,%\s+]/g, ''));

function expectSorted(values: number[], descending: boolean) {
  const sorted = [...values].sort((a, b) => (descending ? b - a : a - b));
  expect(values).toEqual(sorted);
}

/** 24-hour high, low and volume; sorting; the filter; a sparkline; live flashes. */
async function checkMarkets() {
  const btc = page.locator('#price-table tr[data-code="BTC"]');
  const [value, high, low, volume] = (await btc.evaluate((row: any) =>
    ['.value', '.high', '.low', '.volume'].map((s) => row.querySelector(s).textContent),
  )) as string[];
  expect(amount(high!)).toBeGreaterThanOrEqual(amount(value!));
  expect(amount(low!)).toBeLessThanOrEqual(amount(value!));
  expect(volume).toMatch(/^[\d.]+[KMBT]?$/);

  // Highest price first by default; a click sorts ascending, another by the 24-hour change.
  expectSorted((await column('.value')).map(amount), true);
  await page.getByRole('button', { name: 'Price' }).click();
  await page.locator('th[aria-sort="ascending"]', { hasText: 'Price' }).waitFor();
  expectSorted((await column('.value')).map(amount), false);
  await page.getByRole('button', { name: '24 h', exact: true }).click();
  await page.locator('th[aria-sort="descending"]', { hasText: '24 h' }).waitFor();
  expectSorted((await column('.change')).map(amount), true);
  await page.getByRole('button', { name: 'Currency' }).click();
  const codes = await column('.code');
  expect(codes).toEqual([...codes].sort((a, b) => a.localeCompare(b)));

  await page.locator('#price-filter').fill('coin');
  const names = await page.evaluate<
    string[]
  >(`[...document.querySelectorAll('#price-table tbody tr')]
    .filter((row) => !row.hidden).map((row) => row.textContent.toLowerCase())`);
  expect(names.length).toBeGreaterThan(0);
  expect(names.every((n) => n.includes('coin'))).toBe(true);
  await page.locator('#price-filter').fill('');
  await page.getByRole('button', { name: 'Price' }).click(); // back to highest first
  await page.locator('th[aria-sort="descending"]', { hasText: 'Price' }).waitFor();

  await btc.locator('svg.sparkline polyline').waitFor({ timeout: 15_000 });
  // A live price flashes its row.
  await eventually(
    () =>
      page.evaluate<boolean>(
        `document.querySelector('#price-table tbody').getAnimations({ subtree: true }).length > 0`,
      ),
    15_000,
    'a row flashing on a live price',
  );
}

/** From the address bar to a price row by Tab alone; Enter charts it. */
async function checkKeyboard() {
  await page.locator('body').focus();
  for (let presses = 0; presses < 40; presses++) {
    await page.keyboard.press('Tab');
    const code = await page.evaluate(`document.activeElement?.dataset?.code ?? null`);
    if (code === 'ETH') break;
  }
  expect(await page.evaluate(`document.activeElement?.dataset?.code`)).toBe('ETH');
  await page.keyboard.press('Enter');
  await page.locator('#chart-title', { hasText: 'ETH' }).waitFor();
}

/** Visible text whose contrast with the background under it is below WCAG AA (4.5:1). */
function lowContrastTexts() {
  return page.evaluate<{ checked: number; bad: string[] }>(`(() => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (e) => {
      for (; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const bad = [];
    let checked = 0;
    for (const e of document.querySelectorAll('body *')) {
      const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own || !e.checkVisibility() || e.closest('#chart')) continue;
      const a = lum(rgb(getComputedStyle(e).color));
      const b = lum(background(e));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (Number.isFinite(ratio)) checked++;
      if (!(ratio >= 4.5)) bad.push(e.tagName + '.' + e.className + ' ' + ratio.toFixed(2));
    }
    return { checked, bad };
  })()`);
}

/** A phone: one column, no self-scrolling on load, the chart's pickers never under the header. */
async function checkPhone() {
  await page.setViewportSize(PHONE);
  await page.reload();
  await page.locator('#connection', { hasText: 'Live' }).waitFor({ timeout: 15_000 });
  await page.locator('#chart canvas').first().waitFor();
  await page.locator('#holdings-table tr[data-code="BTC"]').waitFor();
  await eventually(() => page.locator('#chart-empty').isHidden(), 15_000, 'chart points');
  expect(await page.evaluate('window.scrollY')).toBe(0);
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-phone.png`, fullPage: true });
  // Elements reaching past the screen's right edge (page-level horizontal scrolling).
  const wide = await page.evaluate(`[...document.querySelectorAll('body *')]
    .filter((e) => e.getBoundingClientRect().right > ${PHONE.width + 0.5})
    .map((e) => e.tagName + '#' + e.id + '.' + e.className)`);
  expect(wide).toEqual([]);
  // Picking a currency in the list scrolls the chart into view, its pickers uncovered.
  await page.locator('#price-table tr[data-code="BTC"]').click();
  await page.locator('#chart-title', { hasText: 'BTC' }).waitFor();
  for (const picker of ['#chart-code', '#chart-range']) {
    await eventually(
      async () =>
        (await page.evaluate(`(() => {
          const box = document.querySelector('${picker}').getBoundingClientRect();
          const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
          return box.top >= 0 && box.bottom <= innerHeight && hit?.closest('${picker}') !== null;
        })()`)) === true,
      15_000,
      `${picker} in view and uncovered`,
    );
  }
}

if (skip) {
  test('browser tests skipped on request (SKIP_BROWSER_TESTS=1)', () => {
    expect(skip).toBe(true);
  });
}
