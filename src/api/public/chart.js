import uPlot from '/app/vendor/uPlot.esm.js';
import { price } from './format.js';

// One line chart of a currency's history (seconds on x), extended by live prices: a price in a
// newer bucket starts a new point (buckets carry their first price, as the history route does);
// a price within the last bucket moves a trailing "now" point.

const measure = document.createElement('canvas').getContext('2d');

function labelWidth(self, values) {
  measure.font = self.axes[1]?.font?.[0] ?? '12px system-ui';
  const widest = Math.max(0, ...(values ?? []).map((v) => measure.measureText(v).width));
  return Math.ceil(widest / devicePixelRatio) + 24;
}

export class PriceChart {
  constructor(element) {
    this.element = element;
    this.xs = [];
    this.ys = [];
    this.intervalSeconds = 60;
    this.lastBucket = -Infinity;
    this.hasTail = false;
    this.plot = null;
    new ResizeObserver(() => this.resize()).observe(element);
  }

  show(points, intervalSeconds) {
    this.intervalSeconds = intervalSeconds;
    this.xs = points.map((p) => Date.parse(p.timestamp) / 1000);
    this.ys = points.map((p) => p.value);
    this.lastBucket = this.xs.at(-1) ?? -Infinity;
    this.hasTail = false;
    this.draw();
  }

  extend(timestamp, value) {
    const t = Date.parse(timestamp) / 1000;
    const bucket = Math.floor(t / this.intervalSeconds) * this.intervalSeconds;
    if (this.hasTail) {
      this.xs.pop();
      this.ys.pop();
      this.hasTail = false;
    }
    if (bucket > this.lastBucket) {
      this.xs.push(bucket);
      this.ys.push(value);
      this.lastBucket = bucket;
    } else if (t > bucket || this.xs.at(-1) !== t) {
      this.xs.push(t);
      this.ys.push(value);
      this.hasTail = true;
    }
    this.plot?.setData([this.xs, this.ys]);
  }

  draw() {
    this.plot?.destroy();
    const { width, height } = this.size();
    this.plot = new uPlot(
      {
        width,
        height,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [
          { stroke: '#8b9bb4', grid: { stroke: 'rgba(139,155,180,0.12)' } },
          {
            stroke: '#8b9bb4',
            grid: { stroke: 'rgba(139,155,180,0.12)' },
            // Wide enough for the longest label ("$31,800.00"), measured rather than guessed.
            size: labelWidth,
            values: (_, ticks) => ticks.map((v) => price(v)),
          },
        ],
        series: [
          {},
          {
            label: 'Price',
            stroke: '#2dd4bf',
            width: 2,
            fill: 'rgba(45,212,191,0.10)',
            points: { show: false },
          },
        ],
      },
      [this.xs, this.ys],
      this.element,
    );
  }

  size() {
    const width = Math.max(240, this.element.clientWidth);
    return { width, height: width < 500 ? 220 : 300 };
  }

  resize() {
    if (this.plot) this.plot.setSize(this.size());
  }
}
