import { io } from '/websocket/socket.io.esm.min.js';
import { api } from './api.js';
import { CandleChart } from './chart.js';
import { flash } from './flash.js';
import { percent, price } from './format.js';
import { MarketsTable } from './markets.js';
import { attempt, toast } from './notices.js';
import { PortfolioView } from './portfolio.js';

// The dashboard: REST for sign-in, history and changes; Socket.IO (/websocket, namespace
// /trader) for live prices and portfolio values. Every failure is shown to the person.

const $ = (selector) => document.querySelector(selector);

const state = {
  signedIn: false,
  account: null,
  currencies: new Map(), // code → { name, logoUrl, value, timestamp, open24h, change24h, … }
  chartCode: null,
  chartRange: { hours: 1, intervalSeconds: 60 },
  socket: null,
};

// ---------- connection ----------

function setConnection(text, kind) {
  const pill = $('#connection');
  pill.textContent = text;
  pill.className = `pill pill-${kind}`;
}

function connect() {
  state.socket?.disconnect();
  const socket = io('/trader', {
    path: '/websocket',
    transports: ['websocket', 'polling'],
    // Called at every (re)connection: the server follows these codes at once and answers with
    // a snapshot of their current values, so nothing stays stale after a reconnection.
    // batch: one `prices` event per harvest cycle rather than a `price` event per currency.
    auth: (send) => send({ codes: [...state.currencies.keys()].slice(0, 500), batch: true }),
  });
  socket.on('connect', () => setConnection('Live', 'live'));
  socket.on('disconnect', (reason) => {
    setConnection('Reconnecting…', 'warn');
    if (reason === 'io server disconnect') socket.connect();
  });
  socket.on('connect_error', (error) => {
    setConnection('Offline', 'error');
    if (!socket.active) {
      toast(`Live updates unavailable: ${error.message}`);
      setTimeout(() => socket.connect(), 3000);
    }
  });
  socket.on('snapshot', (snapshot) => {
    for (const p of snapshot.prices) applyPrice(p, false);
    markets.order();
    if (snapshot.portfolio) renderPortfolio(snapshot.portfolio);
    if (snapshot.error) toast(snapshot.error.message);
  });
  socket.on('price', (p) => queuePrice(p));
  socket.on('prices', ({ timestamp, codes, values }) => {
    codes.forEach((code, i) => queuePrice({ code, value: values[i], timestamp }));
  });
  socket.on('portfolio', (portfolio) => {
    renderPortfolio(portfolio);
    flash($('#total-worth'));
  });
  state.socket = socket;
}

// ---------- prices ----------

// Prices arrive in bursts (one per currency each harvest): apply them once per frame.
let queued = new Map();
function queuePrice(p) {
  if (queued.size === 0) requestAnimationFrame(flushPrices);
  queued.set(p.code, p);
}
function flushPrices() {
  const batch = queued;
  queued = new Map();
  for (const p of batch.values()) applyPrice(p, true);
  markets.order(); // sorted by a moving column, the rows follow
}

function applyPrice({ code, value, timestamp }, live) {
  const entry = state.currencies.get(code);
  if (!entry) return;
  const before = entry.value;
  withPrice(entry, value);
  entry.timestamp = timestamp;
  markets.update(code, before, live);
  if (code === state.chartCode) {
    $('#chart-price').textContent = price(value);
    if (live) chart.extend(timestamp, value);
  }
}

// A live price keeps the 24-hour statistics of the last snapshot current: the change is taken
// against the same opening price the API used (its change24h), high and low widen.
function withPrice(entry, value) {
  entry.value = value;
  if (entry.open24h) entry.change24h = ((value - entry.open24h) / entry.open24h) * 100;
  if (entry.high24h !== null) entry.high24h = Math.max(entry.high24h, value);
  if (entry.low24h !== null) entry.low24h = Math.min(entry.low24h, value);
}

function fillCurrencySelects() {
  for (const select of [$('#chart-code'), $('#add-code')]) {
    const current = select.value;
    select.replaceChildren(
      ...[...state.currencies].map(([code, entry]) => new Option(`${code} · ${entry.name}`, code)),
    );
    if (current) select.value = current;
  }
}

const markets = new MarketsTable({
  table: $('#price-table'),
  filter: $('#price-filter'),
  empty: $('#prices-empty'),
  currencies: state.currencies,
  onPick: (code) => void selectChart(code, { reveal: true }),
});

function entryOf(c) {
  return {
    name: c.currencyName,
    logoUrl: c.logoUrl,
    value: c.value,
    timestamp: c.lastUpdated,
    open24h: c.open24h ?? null,
    high24h: c.high24h ?? null,
    low24h: c.low24h ?? null,
    volume24h: c.volume24h ?? null,
    change24h: c.change24h ?? null,
  };
}

/** The snapshot of every currency; a changed set of currencies rebuilds the table. */
async function loadCurrencies() {
  const { currencies } = await api.currencies();
  const sameSet =
    currencies.length === state.currencies.size &&
    currencies.every((c) => state.currencies.has(c.currencyCode));
  for (const c of currencies) {
    const kept = state.currencies.get(c.currencyCode);
    state.currencies.set(c.currencyCode, { ...kept, ...entryOf(c) });
  }
  if (sameSet) {
    markets.refresh();
    return;
  }
  const listed = new Set(currencies.map((c) => c.currencyCode));
  for (const code of state.currencies.keys()) if (!listed.has(code)) state.currencies.delete(code);
  markets.render();
  fillCurrencySelects();
}

// The 24-hour window slides and volume is not in the live prices: a fresh snapshot each minute.
const STATS_REFRESH_MS = 60_000;

// ---------- chart ----------

const chart = new CandleChart($('#chart'), $('#chart-readout'));
const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** `reveal`: a person picked it from the list; on a phone, bring the chart into view. */
async function selectChart(code, { reveal = false } = {}) {
  state.chartCode = code;
  $('#chart-code').value = code;
  const entry = state.currencies.get(code);
  $('#chart-title').textContent = entry ? `${entry.name} (${code})` : code;
  $('#chart-price').textContent = entry ? price(entry.value) : '—';
  const { hours, intervalSeconds } = state.chartRange;
  await attempt(async () => {
    const candles = (await api.candles(code, hours, intervalSeconds, TIME_ZONE)) ?? [];
    if (state.chartCode !== code) return;
    $('#chart-empty').hidden = candles.length > 0;
    chart.show(candles, intervalSeconds);
    const first = candles[0]?.open;
    const span = $('#chart-range').selectedOptions[0]?.dataset.span ?? `${hours} h`;
    $('#chart-change').textContent =
      first && entry ? `${percent(((entry.value - first) / first) * 100)} over ${span}` : '';
  });
  if (reveal && window.matchMedia('(max-width: 800px)').matches) {
    $('.chart-card').scrollIntoView({ behavior: 'smooth', block: 'start' });
  }
}

// ---------- portfolio ----------

const portfolioView = new PortfolioView();

function renderPortfolio(portfolio) {
  portfolioView.render(portfolio);
}

// ---------- account ----------

function showAuth(which) {
  $('#auth-card').hidden = false;
  $('#signin-form').hidden = which !== 'signin';
  $('#signup-form').hidden = which !== 'signup';
  $('#tab-signin').setAttribute('aria-selected', String(which === 'signin'));
  $('#tab-signup').setAttribute('aria-selected', String(which === 'signup'));
  $(`#${which}-form input`).focus();
}

function renderAvatar() {
  const { account } = state;
  const has = Boolean(account?.hasProfilePicture);
  const src = has ? `/api/account/get/${account.id}/profile-picture?v=${Date.now()}` : '';
  for (const img of [$('#avatar'), $('#avatar-small')]) {
    img.hidden = !has;
    if (has) img.src = src;
  }
  $('#avatar-placeholder').hidden = has;
  $('#avatar-placeholder').textContent = account?.username?.[0]?.toUpperCase() ?? '';
}

async function enterSignedIn() {
  state.signedIn = true;
  state.account = await api.me();
  $('#signed-out-nav').hidden = true;
  $('#signed-in-nav').hidden = false;
  $('#username').textContent = state.account.username;
  $('#auth-card').hidden = true;
  $('#portfolio-signed-out').hidden = true;
  $('#portfolio-body').hidden = false;
  $('#profile-card').hidden = false;
  renderAvatar();
  await portfolioView.load();
  connect(); // the handshake now carries the session cookie: portfolio events follow
}

function enterSignedOut() {
  state.signedIn = false;
  state.account = null;
  $('#signed-out-nav').hidden = false;
  $('#signed-in-nav').hidden = true;
  $('#portfolio-signed-out').hidden = false;
  $('#portfolio-body').hidden = true;
  $('#portfolio-live').hidden = true;
  $('#profile-card').hidden = true;
}

function formValues(form) {
  return Object.fromEntries(new FormData(form).entries());
}

function wireForms() {
  for (const button of document.querySelectorAll('[data-show]')) {
    button.addEventListener('click', () => showAuth(button.dataset.show));
  }
  $('#signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const { email, password } = formValues(event.target);
    void attempt(
      async () => {
        await api.signIn(email, password);
        event.target.reset();
        await enterSignedIn();
        toast('Welcome back.', 'info');
      },
      { button: event.submitter },
    );
  });
  $('#signup-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const { email, username, password } = formValues(event.target);
    void attempt(
      async () => {
        await api.signUp(email, username, password);
        event.target.reset();
        await enterSignedIn();
        toast('Your account is ready.', 'info');
      },
      { button: event.submitter },
    );
  });
  $('#signout').addEventListener('click', (event) => {
    void attempt(
      async () => {
        await api.signOut();
        enterSignedOut();
        connect();
      },
      { button: event.currentTarget },
    );
  });
  $('#add-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const values = formValues(event.target);
    const sharesValue = Number(values.shares);
    const dollars = Number(values.walletDollars);
    if (!Number.isFinite(sharesValue) || !Number.isFinite(dollars)) {
      toast('Shares and cash must be numbers.');
      return;
    }
    void attempt(
      async () => {
        await api.addHolding(values.currencyCode, sharesValue, dollars);
        await portfolioView.load(); // a new holding: its cost and the worth history
        toast(`Added to ${values.currencyCode}.`, 'info');
      },
      { button: event.submitter },
    );
  });
  $('#upload-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const file = $('#picture').files[0];
    if (!file) {
      toast('Choose a picture first.');
      return;
    }
    void attempt(
      async () => {
        await api.uploadPicture(file);
        state.account.hasProfilePicture = true;
        renderAvatar();
        event.target.reset();
        toast('Profile picture updated.', 'info');
      },
      { button: event.submitter },
    );
  });
  $('#chart-code').addEventListener('change', (e) => void selectChart(e.target.value));
  $('#chart-range').addEventListener('change', (e) => {
    const [hours, intervalSeconds] = e.target.value.split(':').map(Number);
    state.chartRange = { hours, intervalSeconds };
    if (state.chartCode) void selectChart(state.chartCode);
  });
}

// ---------- start ----------

async function start() {
  wireForms();
  const [first] = $('#chart-range').value.split(':');
  state.chartRange = {
    hours: Number(first),
    intervalSeconds: Number($('#chart-range').value.split(':')[1]),
  };
  await attempt(loadCurrencies);
  const signedIn = await attempt(() => api.isSignedIn());
  if (signedIn) await attempt(enterSignedIn);
  else {
    enterSignedOut();
    connect();
  }
  // A fresh platform may have no prices yet: look again until the harvester has written some.
  while (state.currencies.size === 0) {
    await new Promise((resolve) => setTimeout(resolve, 5000));
    await loadCurrencies().catch(() => {});
    if (state.currencies.size > 0) connect();
  }
  setInterval(() => void loadCurrencies().catch(() => {}), STATS_REFRESH_MS);
  const firstCode = state.currencies.keys().next().value;
  if (firstCode) await selectChart(firstCode);
}

void start();
