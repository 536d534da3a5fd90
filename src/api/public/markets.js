import { api } from './api.js';
import { flash } from './flash.js';
import { compact, percent, price, trend } from './format.js';

// The markets table: price, 24-hour change, high, low and volume from the snapshot (kept current
// by live prices), a 7-day sparkline per row (one coarse history request when the row first
// comes into view), sorting by any column and a filter.

const WEEK_HOURS = 168;
const WEEK_INTERVAL = 4 * 3600; // 42 points: enough for a line 80 pixels wide
const SPARK = { width: 80, height: 26 };
const PARALLEL_SPARKS = 4;
const SPARK_PAUSE_MS = 30_000;

/** Sort key of each column; null sorts last either way. */
const SORT_KEYS = {
  code: (code) => code,
  value: (_, e) => e.value,
  change24h: (_, e) => e.change24h,
  high24h: (_, e) => e.high24h,
  low24h: (_, e) => e.low24h,
  volume24h: (_, e) => e.volume24h,
  week: (_, e) => e.weekChange ?? null,
};

export class MarketsTable {
  constructor({ table, filter, empty, currencies, onPick }) {
    this.table = table;
    this.body = table.querySelector('tbody');
    this.filterInput = filter;
    this.empty = empty;
    this.currencies = currencies;
    this.onPick = onPick;
    this.sort = { key: 'value', descending: true };
    this.sparkQueue = [];
    this.sparksRunning = 0;
    this.pausedUntil = 0;
    this.sparkObserver = new IntersectionObserver((seen) => this.sparksSeen(seen), {
      root: table.closest('.table-wrap'),
      rootMargin: '100px',
    });
    for (const button of table.querySelectorAll('thead button[data-sort]')) {
      button.addEventListener('click', () => this.sortBy(button.dataset.sort));
    }
    filter.addEventListener('input', () => this.applyFilter());
  }

  /** A new list of currencies (a changed set): every row built again. */
  render() {
    this.sparkObserver.disconnect();
    this.body.replaceChildren(...[...this.currencies.keys()].map((code) => this.row(code)));
    this.empty.hidden = this.currencies.size > 0;
    this.order();
    this.applyFilter();
  }

  /** Fresh 24-hour statistics for the same currencies: cells updated in place. */
  refresh() {
    for (const row of this.body.rows) this.fill(row, this.currencies.get(row.dataset.code));
    this.order();
  }

  /** One currency's live price arrived (`before`: its previous price). */
  update(code, before, live) {
    const row = this.rowOf(code);
    const entry = this.currencies.get(code);
    if (!row || !entry) return;
    this.fill(row, entry);
    if (live && entry.value !== before) flash(row, entry.value > before ? 'up' : 'down');
  }

  rowOf(code) {
    return this.body.querySelector(`tr[data-code="${CSS.escape(code)}"]`);
  }

  row(code) {
    const entry = this.currencies.get(code);
    const row = document.createElement('tr');
    row.dataset.code = code;
    row.tabIndex = 0;
    row.title = `Chart ${entry.name}`;
    const name = document.createElement('td');
    name.innerHTML =
      '<div class="currency"><span class="names"><span class="code"></span><span class="name"></span></span></div>';
    name.querySelector('.code').textContent = code;
    name.querySelector('.name').textContent = entry.name;
    name.firstElementChild.prepend(logo(entry, code));
    const cells = ['value', 'change', 'high wide', 'low wide', 'volume wide'].map((kind) => {
      const cell = document.createElement('td');
      cell.className = `num ${kind}`;
      return cell;
    });
    const spark = document.createElement('td');
    spark.className = 'spark';
    spark.dataset.code = code;
    row.append(name, ...cells, spark);
    this.fill(row, entry);
    row.addEventListener('click', () => this.onPick(code));
    row.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        this.onPick(code);
      }
    });
    this.sparkObserver.observe(spark);
    return row;
  }

  fill(row, entry) {
    row.querySelector('.value').textContent = price(entry.value);
    const change = row.querySelector('.change');
    change.textContent = entry.change24h === null ? '—' : percent(entry.change24h);
    change.className = `num change ${trend(entry.change24h)}`;
    row.querySelector('.high').textContent = entry.high24h === null ? '—' : price(entry.high24h);
    row.querySelector('.low').textContent = entry.low24h === null ? '—' : price(entry.low24h);
    row.querySelector('.volume').textContent =
      entry.volume24h === null ? '—' : compact(entry.volume24h);
  }

  sortBy(key) {
    this.sort =
      this.sort.key === key
        ? { key, descending: !this.sort.descending }
        : { key, descending: key !== 'code' };
    this.order();
  }

  /** Rows in the chosen order; the header says which (aria-sort). */
  order() {
    const { key, descending } = this.sort;
    const of = SORT_KEYS[key];
    const rows = [...this.body.rows].map((row) => {
      const code = row.dataset.code;
      return { row, k: of(code, this.currencies.get(code)) };
    });
    rows.sort((a, b) => {
      if (a.k === null || a.k === undefined) return b.k === null || b.k === undefined ? 0 : 1;
      if (b.k === null || b.k === undefined) return -1;
      const cmp = typeof a.k === 'string' ? a.k.localeCompare(b.k) : a.k - b.k;
      return descending ? -cmp : cmp;
    });
    // Only rows out of place move (a move restarts a flash, costs a layout and drops focus).
    const focused = document.activeElement;
    rows.forEach(({ row }, i) => {
      const there = this.body.rows[i];
      if (there !== row) this.body.insertBefore(row, there);
    });
    if (focused?.parentElement === this.body && document.activeElement !== focused) focused.focus();
    for (const th of this.table.querySelectorAll('thead th')) {
      const sortKey = th.querySelector('button[data-sort]')?.dataset.sort;
      th.setAttribute(
        'aria-sort',
        sortKey === key ? (descending ? 'descending' : 'ascending') : 'none',
      );
    }
  }

  applyFilter() {
    const query = this.filterInput.value.trim().toLowerCase();
    for (const row of this.body.rows) {
      const entry = this.currencies.get(row.dataset.code);
      row.hidden =
        query !== '' &&
        !row.dataset.code.toLowerCase().includes(query) &&
        !entry.name.toLowerCase().includes(query);
    }
  }

  sparksSeen(seen) {
    for (const { target, isIntersecting } of seen) {
      if (!isIntersecting) continue;
      this.sparkObserver.unobserve(target);
      this.sparkQueue.push(target);
    }
    this.drawSparks();
  }

  drawSparks() {
    if (this.pausedUntil > Date.now()) return;
    while (this.sparksRunning < PARALLEL_SPARKS && this.sparkQueue.length > 0) {
      const cell = this.sparkQueue.shift();
      this.sparksRunning++;
      this.spark(cell)
        .catch((error) => {
          if (error?.status === 429) {
            // Over the history routes' rate limit: the rest waits, nothing is lost.
            this.sparkQueue.unshift(cell);
            this.pausedUntil = Date.now() + SPARK_PAUSE_MS;
            setTimeout(() => this.drawSparks(), SPARK_PAUSE_MS);
            return;
          }
          cell.textContent = '—'; // a missing sparkline is not worth a notice
        })
        .finally(() => {
          this.sparksRunning--;
          this.drawSparks();
        });
    }
  }

  async spark(cell) {
    const code = cell.dataset.code;
    const points = (await api.history(code, WEEK_HOURS, WEEK_INTERVAL)) ?? [];
    const entry = this.currencies.get(code);
    if (!entry) return;
    // The line ends at the current price.
    const values = [...points.map((p) => p.value), entry.value];
    entry.weekChange = ((entry.value - values[0]) / values[0]) * 100;
    cell.replaceChildren(sparkline(values, entry.weekChange));
    cell.title = `7 days: ${percent(entry.weekChange)}`;
  }
}

function sparkline(values, change) {
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', SPARK.width);
  svg.setAttribute('height', SPARK.height);
  svg.setAttribute('viewBox', `0 0 ${SPARK.width} ${SPARK.height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `7 days ${percent(change)}`);
  svg.classList.add('sparkline', trend(change) || 'flat');
  const low = Math.min(...values);
  const span = Math.max(...values) - low || 1;
  const step = SPARK.width / Math.max(1, values.length - 1);
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute(
    'points',
    values
      .map((v, i) => {
        const y = SPARK.height - 2 - ((v - low) / span) * (SPARK.height - 4);
        return `${(i * step).toFixed(1)},${y.toFixed(1)}`;
      })
      .join(' '),
  );
  svg.append(line);
  return svg;
}

// The currency's icon (served by the API at its logoUrl); its initial when the picture fails.
function logo(entry, code) {
  if (!entry.logoUrl) return glyph(code);
  const img = document.createElement('img');
  img.className = 'logo';
  img.alt = '';
  img.width = 22;
  img.height = 22;
  img.loading = 'lazy';
  img.addEventListener('error', () => img.replaceWith(glyph(code)), { once: true });
  img.src = entry.logoUrl;
  return img;
}

function glyph(code) {
  const span = document.createElement('span');
  span.className = 'logo logo-glyph';
  span.setAttribute('aria-hidden', 'true');
  span.textContent = code.slice(0, 1);
  return span;
}
