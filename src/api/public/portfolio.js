import { AreaSeries, createChart } from '/app/vendor/lightweight-charts.mjs';
import { api } from './api.js';
import { localTime, tickMark } from './chart.js';
import { money, percent, shares } from './format.js';

// The portfolio card: worth, profit (per asset and in all) and allocation, kept live by the
// `portfolio` events; total worth over the last day from the portfolio history route.

const WORTH_WINDOW = { hours: 24, intervalSeconds: 300 };
const $ = (selector) => document.querySelector(selector);

export class PortfolioView {
  constructor() {
    // What each holding cost (current value − unrealised profit): constant while prices move,
    // so live values give live profits without asking again.
    this.costs = new Map();
    this.worth = createChart($('#worth-chart'), {
      autoSize: true,
      layout: {
        background: { color: 'transparent' },
        textColor: '#a3b1c6',
        attributionLogo: false,
      },
      grid: { vertLines: { visible: false }, horzLines: { color: 'rgba(139,155,180,0.12)' } },
      // Only whole price labels (the top one was cut by the pane's edge).
      rightPriceScale: { borderVisible: false, entireTextOnly: true },
      timeScale: {
        borderVisible: false,
        timeVisible: true,
        secondsVisible: false,
        tickMarkFormatter: tickMark,
        maxBarSpacing: 24,
      },
      // An overview of one day: no panning or zooming (nor a swipe caught on a phone), which
      // also lets lightweight-charts keep the labels at both ends whole, inside the axis.
      handleScroll: false,
      handleScale: false,
      localization: { priceFormatter: money, timeFormatter: localTime },
    });
    this.series = this.worth.addSeries(AreaSeries, {
      lineColor: '#2dd4bf',
      topColor: 'rgba(45,212,191,0.25)',
      bottomColor: 'rgba(45,212,191,0.02)',
      lineWidth: 2,
      priceLineVisible: false,
    });
  }

  /** Worth history and profits from the API, then the portfolio itself. */
  async load() {
    const [portfolio, history] = await Promise.all([
      api.portfolio(),
      api.portfolioHistory(WORTH_WINDOW.hours, WORTH_WINDOW.intervalSeconds),
    ]);
    this.costs = await costsOf(portfolio);
    const points = (history ?? []).map((p) => ({
      time: Date.parse(p.timestamp) / 1000,
      value: p.totalWorth,
    }));
    this.series.setData(points);
    this.worth.timeScale().fitContent();
    $('#worth-empty').hidden = points.length > 0;
    this.render(portfolio);
  }

  /** A portfolio from the API or a live event. */
  render(portfolio) {
    $('#total-worth').textContent = money(portfolio.totalWorth);
    $('#share-balance').textContent = money(portfolio.shareBalance);
    $('#dollar-balance').textContent = money(portfolio.dollarBalance);
    const held = portfolio.assets.filter((a) => a.shares > 0);
    const profitOf = (a) =>
      this.costs.has(a.currencyCode)
        ? a.sharesValueInDollars - this.costs.get(a.currencyCode)
        : null;
    const profits = held.map(profitOf).filter((p) => p !== null);
    const total = profits.reduce((sum, p) => sum + p, 0);
    const cost = held.reduce((sum, a) => sum + (this.costs.get(a.currencyCode) ?? 0), 0);
    renderProfit($('#total-profit'), profits.length > 0 ? total : null, cost);
    $('#holdings-table tbody').replaceChildren(
      ...held.map((asset) => this.row(asset, profitOf(asset), portfolio.totalWorth)),
    );
    this.renderAllocation(held, portfolio);
    $('#holdings-empty').hidden = held.length > 0;
    $('#portfolio-live').hidden = false;
    this.extendWorth(portfolio.totalWorth);
  }

  row(asset, profit, totalWorth) {
    const row = document.createElement('tr');
    row.dataset.code = asset.currencyCode;
    const name = document.createElement('td');
    name.innerHTML = '<span class="code"></span><span class="name"></span>';
    name.querySelector('.code').textContent = asset.currencyCode;
    name.querySelector('.name').textContent = asset.currencyName;
    const cells = [
      ['num wide', shares(asset.shares)],
      ['num value', money(asset.totalValueInDollars)],
      ['num profit', ''],
      ['num share wide', totalWorth > 0 ? percentOf(asset.sharesValueInDollars, totalWorth) : '—'],
    ].map(([className, text]) => {
      const cell = document.createElement('td');
      cell.className = className;
      cell.textContent = text;
      return cell;
    });
    renderProfit(cells[2], profit); // the relative profit in the tooltip: the card is narrow
    const cost = this.costs.get(asset.currencyCode);
    if (profit !== null && cost > 0) cells[2].title = percent((profit / cost) * 100);
    row.append(name, ...cells);
    return row;
  }

  /** One bar split by holding (their shares' value), cash last. */
  renderAllocation(held, portfolio) {
    const bar = $('#allocation');
    const parts = [
      ...held.map((a) => [a.currencyCode, a.sharesValueInDollars]),
      ['Cash', portfolio.dollarBalance],
    ].filter(([, v]) => v > 0);
    bar.hidden = portfolio.totalWorth <= 0 || parts.length === 0;
    bar.replaceChildren(
      ...parts.map(([label, value], i) => {
        const part = document.createElement('span');
        part.className = `slice slice-${i % 6}`;
        part.style.flexGrow = String(value);
        part.title = `${label} ${percentOf(value, portfolio.totalWorth)}`;
        return part;
      }),
    );
    bar.setAttribute(
      'aria-label',
      `Allocation: ${parts.map(([l, v]) => `${l} ${percentOf(v, portfolio.totalWorth)}`).join(', ')}`,
    );
  }

  extendWorth(value) {
    const now = Date.now() / 1000;
    const time = Math.floor(now / WORTH_WINDOW.intervalSeconds) * WORTH_WINDOW.intervalSeconds;
    const last = this.series.data().at(-1);
    if (last && last.time > time) return;
    this.series.update({ time, value });
    $('#worth-empty').hidden = true;
  }
}

function percentOf(part, whole) {
  return `${((part / whole) * 100).toFixed(1)} %`;
}

function renderProfit(element, profit, cost) {
  if (profit === null || profit === undefined) {
    element.textContent = '—';
    element.className = element.className.replace(/ ?\b(up|down)\b/g, '');
    return;
  }
  const sign = profit > 0.005 ? '+' : profit < -0.005 ? '−' : '';
  const relative = cost > 0 ? ` (${percent((profit / cost) * 100)})` : '';
  element.textContent = `${sign}${money(Math.abs(profit))}${relative}`;
  element.classList.toggle('up', profit > 0.005);
  element.classList.toggle('down', profit < -0.005);
}

/**
 * What each holding cost: its value minus its unrealised profit, both at one price. The two come
 * from two requests, so a price that moves between them would skew every later live profit; the
 * pair is taken again until the holdings' values are the same after the profits as before them.
 */
async function costsOf(portfolio) {
  let before = portfolio;
  for (let attempt = 0; ; attempt++) {
    const held = before.assets.filter((a) => a.shares > 0);
    const profits = await Promise.all(held.map((a) => api.profitOf(a.currencyCode)));
    const after = await api.portfolio();
    const valueOf = (p, code) =>
      p.assets.find((a) => a.currencyCode === code)?.sharesValueInDollars;
    const steady = held.every((a) => valueOf(after, a.currencyCode) === a.sharesValueInDollars);
    if (steady || attempt >= 4) {
      return new Map(
        held.map((a, i) => [a.currencyCode, a.sharesValueInDollars - profits[i].value]),
      );
    }
    before = after;
  }
}
