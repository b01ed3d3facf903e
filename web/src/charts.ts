// uPlot charts: CDFs and quantiles over time. Colours come from the theme's CSS variables, so
// a theme change re-renders the page and the charts with it. Each chart sits in a <figure>
// whose data attributes state what it plots (series and point counts), next to a table of
// the same numbers for keyboard and screen-reader users.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import { cssVar } from './theme';
import { h } from './dom';

const kHeight = 260;

function palette(): string[] {
  return [1, 2, 3, 4, 5, 6].map((i) => cssVar(`--series-${i}`));
}

function axis(label: string, extra: Partial<uPlot.Axis> = {}): uPlot.Axis {
  const fg = cssVar('--fg-muted');
  return {
    label,
    stroke: fg,
    grid: { stroke: cssVar('--grid'), width: 1 },
    ticks: { stroke: cssVar('--grid'), width: 1 },
    font: '12px system-ui, sans-serif',
    labelFont: '12px system-ui, sans-serif',
    ...extra,
  };
}

/** Creates the chart once its container has a width and follows the container's size. */
function mount(
  container: HTMLElement,
  makeOpts: (width: number) => uPlot.Options,
  data: uPlot.AlignedData,
): () => void {
  let plot: uPlot | null = null;
  const ro = new ResizeObserver((entries) => {
    const width = Math.floor(entries[0]?.contentRect.width ?? 0);
    if (width <= 0) return;
    if (!plot) {
      plot = new uPlot(makeOpts(width), data, container);
      container.dataset.drawn = 'true';
    } else if (Math.abs(plot.width - width) > 1) {
      plot.setSize({ width, height: kHeight });
    }
  });
  ro.observe(container);
  return () => {
    ro.disconnect();
    plot?.destroy();
    plot = null;
  };
}

export interface ChartHandle {
  el: HTMLElement;
  dispose: () => void;
}

export interface CdfSeries {
  label: string;
  /** [value, cumulative fraction] pairs, ascending. */
  points: ReadonlyArray<readonly [number, number]>;
}

/** A CDF on a logarithmic value axis (latencies span orders of magnitude). */
export function cdfChart(key: string, axisLabel: string, series: readonly CdfSeries[], summary: string): ChartHandle {
  const colors = palette();
  const tables: uPlot.AlignedData[] = series.map((s) => {
    const pts = s.points.filter(([x]) => x > 0);
    return [pts.map(([x]) => x), pts.map(([, y]) => y)];
  });
  const data = tables.length === 1 ? tables[0]! : uPlot.join(tables);
  const plotArea = h('div', { class: 'chart-canvas', role: 'img', 'aria-label': summary });
  const dispose = mount(
    plotArea,
    (width) => ({
      width,
      height: kHeight,
      scales: { x: { time: false, distr: 3 }, y: { range: [0, 1] } },
      series: [
        { label: axisLabel },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: colors[i % colors.length]!,
          width: 2,
          spanGaps: true,
          value: (_u: uPlot, v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`),
        })),
      ],
      axes: [
        axis(axisLabel),
        axis('cumulative fraction', { values: (_u, ticks) => ticks.map((t) => `${Math.round(t * 100)}%`) }),
      ],
      legend: { live: true },
    }),
    data,
  );
  const el = h('div', {
    class: 'chart',
    'data-chart': key,
    'data-series': series.length,
    'data-points': series.map((s) => s.points.length).join(','),
  }, plotArea);
  return { el, dispose };
}

export interface TimeSeriesLine {
  label: string;
  values: ReadonlyArray<number | null>;
}

/** Quantiles over time, with the sample count per bucket on a second axis. */
export function timeChart(
  key: string,
  axisLabel: string,
  times: readonly number[],
  lines: readonly TimeSeriesLine[],
  samples: readonly number[],
  summary: string,
): ChartHandle {
  const colors = palette();
  const data: uPlot.AlignedData = [
    times.slice(),
    ...lines.map((l) => l.values.slice()),
    samples.slice(),
  ];
  const plotArea = h('div', { class: 'chart-canvas', role: 'img', 'aria-label': summary });
  const dispose = mount(
    plotArea,
    (width) => ({
      width,
      height: kHeight,
      scales: { x: { time: true }, n: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
      series: [
        {},
        ...lines.map((l, i) => ({ label: l.label, stroke: colors[i % colors.length]!, width: 2 })),
        { label: 'samples (n)', scale: 'n', stroke: cssVar('--fg-faint'), width: 1, dash: [4, 4] },
      ],
      axes: [
        axis('', { space: 70 }),
        axis(axisLabel),
        axis('samples', { scale: 'n', side: 1, grid: { show: false } }),
      ],
    }),
    data,
  );
  const el = h('div', {
    class: 'chart',
    'data-chart': key,
    'data-series': lines.length,
    'data-points': times.length,
  }, plotArea);
  return { el, dispose };
}

/** One line per series over the 24 hours of the day (x: 0-23, in the time zone the data was
 *  asked in); null hours (too few samples) are gaps, not zeros. */
export function hourChart(key: string, axisLabel: string, tz: string, lines: readonly TimeSeriesLine[], summary: string): ChartHandle {
  const colors = palette();
  const hours = Array.from({ length: 24 }, (_, i) => i);
  const data: uPlot.AlignedData = [hours, ...lines.map((l) => l.values.slice())];
  const plotArea = h('div', { class: 'chart-canvas', role: 'img', 'aria-label': summary });
  const dispose = mount(
    plotArea,
    (width) => ({
      width,
      height: kHeight,
      scales: { x: { time: false, range: [0, 23] } },
      series: [
        { label: `hour (${tz})`, value: (_u: uPlot, v: number | null) => (v === null ? '–' : `${String(v).padStart(2, '0')}:00`) },
        ...lines.map((l, i) => ({ label: l.label, stroke: colors[i % colors.length]!, width: 2, points: { show: true, size: 4 } })),
      ],
      axes: [
        axis(`hour of day (${tz})`, { values: (_u, ticks) => ticks.map((t) => `${String(t).padStart(2, '0')}:00`), space: 50 }),
        axis(axisLabel),
      ],
    }),
    data,
  );
  const el = h('div', { class: 'chart', 'data-chart': key, 'data-series': lines.length, 'data-points': lines.map((l) => l.values.filter((v) => v !== null).length).join(',') }, plotArea);
  return { el, dispose };
}
