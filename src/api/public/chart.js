import {
  CandlestickSeries,
  createChart,
  CrosshairMode,
  HistogramSeries,
} from '/app/vendor/lightweight-charts.mjs';
import { compact, price } from './format.js';

// Candlesticks with volume bars (lightweight-charts), in the browser's time zone, with a
// crosshair readout of time and OHLCV; live prices move the current candle or open the next.

const COLORS = { up: '#34d399', down: '#f87171', text: '#a3b1c6', grid: 'rgba(139,155,180,0.12)' };

const local = {
  time: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }),
  day: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' }),
  month: new Intl.DateTimeFormat(undefined, { month: 'short', year: 'numeric' }),
  full: new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }),
};

/** Tick labels in local time: time of day within a day, dates above that. */
export function tickMark(time, tickType) {
  const date = new Date(time * 1000);
  if (tickType <= 1) return local.month.format(date); // year, month
  if (tickType === 2) return local.day.format(date);
  return local.time.format(date);
}

/** Crosshair labels and the readout in local time. */
export function localTime(time) {
  return local.full.format(new Date(time * 1000));
}

export class CandleChart {
  constructor(element, readout) {
    this.readout = readout;
    this.candles = [];
    this.intervalSeconds = 60;
    this.chart = createChart(element, {
      autoSize: true,
      layout: {
        background: { color: 'transparent' },
        textColor: COLORS.text,
        fontFamily: 'system-ui, sans-serif',
        // Its logo needs an inline <style> our CSP refuses: the footer carries the attribution.
        attributionLogo: false,
      },
      grid: { vertLines: { color: COLORS.grid }, horzLines: { color: COLORS.grid } },
      crosshair: { mode: CrosshairMode.Normal },
      // Only whole labels: one cut by the pane's top or bottom edge reads as another price.
      rightPriceScale: { borderColor: COLORS.grid, entireTextOnly: true },
      timeScale: {
        borderColor: COLORS.grid,
        timeVisible: true,
        secondsVisible: false,
        tickMarkFormatter: tickMark,
        maxBarSpacing: 24, // a fresh market's single candle stays a candle, not a block
        // The latest candle sits at the right edge: with the edge fixed, lightweight-charts
        // shifts the label under it inside the axis rather than cutting it in half.
        fixRightEdge: true,
      },
      localization: { priceFormatter: price, timeFormatter: localTime },
    });
    this.series = this.chart.addSeries(CandlestickSeries, {
      upColor: COLORS.up,
      downColor: COLORS.down,
      wickUpColor: COLORS.up,
      wickDownColor: COLORS.down,
      borderVisible: false,
    });
    this.volume = this.chart.addSeries(HistogramSeries, {
      priceFormat: { type: 'volume' },
      priceScaleId: 'volume',
      lastValueVisible: false,
      priceLineVisible: false,
    });
    this.chart.priceScale('volume').applyOptions({ scaleMargins: { top: 0.8, bottom: 0 } });
    this.series.priceScale().applyOptions({ scaleMargins: { top: 0.08, bottom: 0.25 } });
    this.chart.subscribeCrosshairMove((param) => {
      const candle = param.time === undefined ? undefined : param.seriesData.get(this.series);
      const bar = candle ? this.candles.find((c) => c.time === param.time) : undefined;
      this.showReadout(bar ?? this.candles.at(-1), bar ? 'crosshair' : 'latest');
    });
  }

  /** Candles from the API (timestamps are bucket starts). */
  show(candles, intervalSeconds) {
    this.intervalSeconds = intervalSeconds;
    this.candles = candles.map((c) => ({
      time: Date.parse(c.timestamp) / 1000,
      open: c.open,
      high: c.high,
      low: c.low,
      close: c.close,
      volume: c.volume,
    }));
    const last = this.candles.at(-1)?.close ?? 1;
    const digits = Math.abs(last) >= 1 ? 2 : Math.min(10, 2 - Math.floor(Math.log10(last)) + 2);
    this.series.applyOptions({
      priceFormat: { type: 'price', precision: digits, minMove: 10 ** -digits },
    });
    this.series.setData(this.candles);
    this.volume.setData(this.candles.map((c) => this.volumeBar(c)));
    this.chart.timeScale().fitContent();
    this.showReadout(this.candles.at(-1));
  }

  /** A live price: within the last candle it moves it, later it opens the next one. */
  extend(timestamp, value) {
    const t = Date.parse(timestamp) / 1000;
    const last = this.candles.at(-1);
    if (last && t < last.time) return;
    let candle;
    if (last && t < last.time + this.intervalSeconds) {
      candle = last;
      candle.high = Math.max(candle.high, value);
      candle.low = Math.min(candle.low, value);
      candle.close = value;
    } else {
      // The next start on the same grid as the server's candles (local midnights included).
      const start = last
        ? last.time + Math.floor((t - last.time) / this.intervalSeconds) * this.intervalSeconds
        : Math.floor(t / this.intervalSeconds) * this.intervalSeconds;
      candle = { time: start, open: value, high: value, low: value, close: value, volume: 0 };
      this.candles.push(candle);
    }
    this.series.update(candle);
    this.volume.update(this.volumeBar(candle));
    this.showReadout(candle);
  }

  volumeBar(c) {
    return {
      time: c.time,
      value: c.volume,
      color: c.close >= c.open ? 'rgba(52,211,153,0.35)' : 'rgba(248,113,113,0.35)',
    };
  }

  /** `source`: the candle under the crosshair, or the latest one. */
  showReadout(c, source = 'latest') {
    this.readout.dataset.source = source;
    if (!c) {
      this.readout.textContent = '';
      return;
    }
    const parts = [
      ['', localTime(c.time)],
      ['O', price(c.open)],
      ['H', price(c.high)],
      ['L', price(c.low)],
      ['C', price(c.close)],
      ['V', compact(c.volume)],
    ];
    this.readout.replaceChildren(
      ...parts.map(([label, value]) => {
        const item = document.createElement('span');
        if (label) {
          const name = document.createElement('b');
          name.textContent = label;
          item.append(name, ` ${value}`);
        } else item.textContent = value;
        return item;
      }),
    );
  }
}
