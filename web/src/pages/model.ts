// Model detail: headline numbers, TTFT and TPOT CDFs, and p50/p95 over time for one
// (provider, model), under the same filters as the leaderboard.

import type { Distribution, DistributionSeries, Leaderboard, LeaderboardRow, Timeseries, TimeseriesSeries } from '../api';
import type * as Charts from '../charts';
import { h } from '../dom';
import { fmtCount, fmtMs, fmtMsUnit, fmtN, fmtPct, fmtRate } from '../format';
import type { Page, PageContext } from '../page';
import { apiParams, href, sharedParams, withParam } from '../route';
import { emptyState, exportLinks, filterBar, heading, insufficientText, loadLabelValues, select, statTile, type LabelValues } from '../widgets';

const kDefaultWindow = '24h';
const kQuantiles = ['0.5', '0.95'] as const;

interface Data {
  // uPlot loads with this page only, so the leaderboard's first load does not carry it.
  charts: typeof Charts;
  row: LeaderboardRow | undefined;
  minSamples: number;
  cdf: { ttft: DistributionSeries | undefined; tpot: DistributionSeries | undefined };
  ts: { ttft: TimeseriesSeries | undefined; tpot: TimeseriesSeries | undefined; bucket: string };
  values: LabelValues;
}

function target(ctx: PageContext): { provider: string; model: string } {
  return { provider: ctx.route.args[0] ?? '', model: ctx.route.args[1] ?? '' };
}

function modelParams(ctx: PageContext, extra: Record<string, string> = {}): URLSearchParams {
  const { provider, model } = target(ctx);
  const p = apiParams(ctx.route, kDefaultWindow);
  p.set('provider', provider);
  p.set('model', model);
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  return p;
}

function pick<T extends { provider: string; model: string }>(ctx: PageContext, list: readonly T[]): T | undefined {
  const { provider, model } = target(ctx);
  return list.find((s) => s.provider === provider && s.model === model);
}

function qKey(q: string): string {
  return `p${Math.round(Number(q) * 100)}`;
}

function stats(row: LeaderboardRow | undefined, minSamples: number): HTMLElement {
  if (!row) return emptyState('No measurements of this model match these filters in this window.');
  if (row.insufficient) {
    return h('p', { class: 'insufficient', 'data-stat': 'insufficient' }, insufficientText(row.samples, minSamples));
  }
  const note = fmtN(row.samples);
  const show = (key: string, label: string, v: number | null | undefined, format: (v: number) => string) =>
    statTile(key, label, v === null || v === undefined ? '–' : format(v), v, note);
  return h(
    'dl',
    { class: 'stats' },
    show('ttft_p50', 'TTFT p50', row.ttft_ms?.p50, fmtMsUnit),
    show('ttft_p95', 'TTFT p95', row.ttft_ms?.p95, fmtMsUnit),
    show('ttft_p99', 'TTFT p99', row.ttft_ms?.p99, fmtMsUnit),
    show('tps_p50', 'Tokens/s p50', row.decode_tps_p50, fmtRate),
    show('tpot_p50', 'TPOT p50', row.tpot_ms?.p50, fmtMsUnit),
    show('tpot_p95', 'TPOT p95', row.tpot_ms?.p95, fmtMsUnit),
    show('e2e_p50', 'E2E p50', row.e2e_ms?.p50, fmtMsUnit),
    show('e2e_p95', 'E2E p95', row.e2e_ms?.p95, fmtMsUnit),
    show('e2e500_p50', 'E2E@500 p50', row.e2e500_ms?.p50, fmtMsUnit),
    show('error_rate', 'Error rate', row.error_rate, fmtPct),
    show('samples', 'Samples', row.samples, fmtCount),
  );
}

function dataTableDetails(caption: string, head: string[], rows: Array<Array<string>>): HTMLElement {
  return h(
    'details',
    { class: 'chart-data' },
    h('summary', { 'data-key': `data:${caption}` }, `${caption}: data table`),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data compact' },
        h('caption', { class: 'sr-only' }, caption),
        h('thead', null, h('tr', null, head.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => h('td', { class: 'num' }, c))))),
      ),
    ),
  );
}

function cdfFigure(charts: typeof Charts, ctx: PageContext, key: string, title: string, unit: string, s: DistributionSeries | undefined, minSamples: number) {
  const body: Node[] = [];
  if (!s || s.cdf.length === 0) {
    body.push(emptyState('No data.'));
  } else if (s.insufficient) {
    body.push(h('p', { class: 'insufficient' }, insufficientText(s.samples, minSamples)));
  } else {
    const at = (q: number) => s.cdf.find(([, f]) => f >= q)?.[0];
    const p50 = at(0.5);
    const p95 = at(0.95);
    const summary = `${title} of ${s.model}: p50 ${p50 === undefined ? '–' : fmtMs(p50)} ${unit}, p95 ${p95 === undefined ? '–' : fmtMs(p95)} ${unit}, ${fmtN(s.samples)}`;
    const chart = charts.cdfChart(key, `${title} (${unit})`, [{ label: s.model, points: s.cdf }], summary);
    ctx.onDispose(chart.dispose);
    body.push(
      chart.el,
      dataTableDetails(title, [`${title} (${unit})`, 'fraction ≤'], s.cdf.map(([x, f]) => [fmtMs(x), `${(f * 100).toFixed(1)}%`])),
    );
  }
  return h(
    'figure',
    { class: 'card', 'data-figure': key },
    h('figcaption', null, `${title} distribution (CDF)`, s ? h('span', { class: 'n' }, ` ${fmtN(s.samples)}`) : null),
    body,
  );
}

function timeFigure(charts: typeof Charts, ctx: PageContext, key: string, title: string, unit: string, s: TimeseriesSeries | undefined, bucket: string) {
  const body: Node[] = [];
  if (!s || s.points.length === 0) {
    body.push(emptyState('No data.'));
  } else {
    const times = s.points.map((p) => Date.parse(p.t) / 1000);
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    const lines = kQuantiles.map((q) => ({
      label: qKey(q),
      values: s.points.map((p) => (p.insufficient ? null : num(p[qKey(q)]))),
    }));
    const samples = s.points.map((p) => p.samples);
    const total = samples.reduce((a, b) => a + b, 0);
    const summary = `${title} p50 and p95 per ${bucket} for ${s.model}, ${s.points.length} buckets, ${fmtN(total)}`;
    const chart = charts.timeChart(key, `${title} (${unit})`, times, lines, samples, summary);
    ctx.onDispose(chart.dispose);
    body.push(
      chart.el,
      dataTableDetails(
        `${title} over time`,
        ['time', 'n', ...kQuantiles.map((q) => `${qKey(q)} (${unit})`)],
        s.points.map((p) => [
          new Date(p.t).toLocaleString(),
          fmtCount(p.samples),
          ...kQuantiles.map((q) => {
            const v = num(p[qKey(q)]);
            return p.insufficient || v === null ? 'insufficient' : fmtMs(v);
          }),
        ]),
      ),
    );
  }
  return h('figure', { class: 'card', 'data-figure': key }, h('figcaption', null, `${title} p50 / p95 per ${bucket}`), body);
}

// The observatory's SVG badges (/badge/{provider}/{model}/{metric}.svg), served beside the API.
const kBadgeMetrics = [
  ['ttft_p50', 'TTFT p50'],
  ['ttft_p95', 'TTFT p95'],
  ['tpot_p50', 'TPOT p50'],
  ['e2e_p50', 'E2E p50'],
  ['tps_p50', 'tokens/s p50'],
  ['error_rate', 'error rate'],
  ['status', 'status'],
] as const;

export function badgeUrl(provider: string, model: string, metric: string): string {
  return new URL(`badge/${encodeURIComponent(provider)}/${encodeURIComponent(model)}/${metric}.svg`, document.baseURI).toString();
}

function embedSection(ctx: PageContext): HTMLElement {
  const { provider, model } = target(ctx);
  const metric = kBadgeMetrics.some(([m]) => m === ctx.route.params.get('badge')) ? ctx.route.params.get('badge')! : 'ttft_p50';
  const url = badgeUrl(provider, model, metric);
  const markdown = `![${model} ${kBadgeMetrics.find(([m]) => m === metric)?.[1] ?? metric} (TokenRadar)](${url})`;
  const status = h('span', { class: 'muted', role: 'status', 'data-copy-status': '' });
  const code = h('input', { id: 'embed-markdown', type: 'text', readonly: true, value: markdown, 'data-key': 'embed:markdown', class: 'embed-code', spellcheck: 'false' });
  const copy = async () => {
    code.select();
    try {
      await navigator.clipboard.writeText(markdown);
      status.textContent = 'Copied.';
    } catch {
      // Clipboard refused (permissions, an insecure origin): the text is selected, Ctrl+C copies it.
      status.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    }
  };
  // Built when opened: the badge is one more request, and only someone embedding wants it.
  // Once a badge was chosen (?badge= in the hash) it renders open and built, so a re-render
  // finds the select again and keeps focus on it.
  const chosen = ctx.route.params.has('badge');
  const details = h(
    'details',
    { class: 'embed', open: chosen },
    h('summary', { 'data-key': 'embed' }, h('h2', { id: 'embed-h' }, 'Embed'), h('span', { class: 'muted' }, ' a live badge for a README or a status page')),
  );
  let built = chosen;
  if (chosen) details.append(...embedBody(ctx, metric, url, code, status, copy));
  details.addEventListener('toggle', () => {
    if (!details.open || built) return;
    built = true;
    details.append(...embedBody(ctx, metric, url, code, status, copy));
  });
  return details;
}

function embedBody(
  ctx: PageContext,
  metric: string,
  url: string,
  code: HTMLInputElement,
  status: HTMLElement,
  copy: () => Promise<void>,
): HTMLElement[] {
  const { model } = target(ctx);
  return [
    h('p', { class: 'muted' }, 'An SVG from this server, updated as measurements arrive.'),
    h(
      'div',
      { class: 'filters' },
      select('badge', 'Badge', metric, kBadgeMetrics.map(([value, label]) => ({ value, label })), (v) => ctx.setParams(withParam(ctx.route.params, 'badge', v))),
    ),
    h('p', null, h('img', { src: url, alt: `${model} ${metric.replace('_', ' ')} badge`, class: 'badge', 'data-badge': metric, height: 20 })),
    h('label', { for: 'embed-markdown' }, 'Markdown'),
    h('div', { class: 'embed-row' }, code, h('button', { type: 'button', 'data-key': 'embed:copy', onclick: () => void copy() }, 'Copy'), status),
  ];
}

export const modelPage: Page<Data> = {
  title: (route) => `${route.args[1] ?? 'Model'} (${route.args[0] ?? ''})`,

  async load(ctx) {
    const window = apiParams(ctx.route, kDefaultWindow).get('window') ?? kDefaultWindow;
    const qs = kQuantiles.join(',');
    const [charts, board, ttftCdf, tpotCdf, ttftTs, tpotTs, values] = await Promise.all([
      import('../charts'),
      ctx.get<Leaderboard>('leaderboard', modelParams(ctx)),
      ctx.get<Distribution>('distribution', modelParams(ctx, { metric: 'ttft' })),
      ctx.get<Distribution>('distribution', modelParams(ctx, { metric: 'tpot' })),
      ctx.get<Timeseries>('timeseries', modelParams(ctx, { metric: 'ttft', q: qs })),
      ctx.get<Timeseries>('timeseries', modelParams(ctx, { metric: 'tpot', q: qs })),
      loadLabelValues(ctx, window),
    ]);
    return {
      charts,
      row: pick(ctx, board.rows),
      minSamples: board.min_samples,
      cdf: { ttft: pick(ctx, ttftCdf.series), tpot: pick(ctx, tpotCdf.series) },
      ts: { ttft: pick(ctx, ttftTs.series), tpot: pick(ctx, tpotTs.series), bucket: ttftTs.bucket },
      values,
    };
  },

  render(ctx, d) {
    const { provider, model } = target(ctx);
    return h(
      'section',
      { class: 'page' },
      h(
        'p',
        { class: 'crumbs' },
        h('a', { href: href('leaderboard', [], sharedParams(ctx.route.params)), 'data-key': 'crumb' }, '← Leaderboard'),
        ' · ',
        h('a', { href: href('compare', [], withParam(sharedParams(ctx.route.params), 'models', `${provider}/${model}`)), 'data-key': 'crumb:compare' }, 'Compare with others'),
      ),
      heading(h('span', { class: 'model-name' }, model), ' ', h('span', { class: 'provider-name' }, provider)),
      filterBar(ctx, d.values, ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'], kDefaultWindow),
      exportLinks([
        { label: 'numbers', path: 'leaderboard', params: modelParams(ctx) },
        { label: 'TTFT CDF', path: 'distribution', params: modelParams(ctx, { metric: 'ttft' }) },
        { label: 'TPOT CDF', path: 'distribution', params: modelParams(ctx, { metric: 'tpot' }) },
        { label: 'TTFT over time', path: 'timeseries', params: modelParams(ctx, { metric: 'ttft', q: kQuantiles.join(',') }) },
        { label: 'TPOT over time', path: 'timeseries', params: modelParams(ctx, { metric: 'tpot', q: kQuantiles.join(',') }) },
      ]),
      stats(d.row, d.minSamples),
      h(
        'div',
        { class: 'grid-2' },
        cdfFigure(d.charts, ctx, 'ttft-cdf', 'TTFT', 'ms', d.cdf.ttft, d.minSamples),
        cdfFigure(d.charts, ctx, 'tpot-cdf', 'TPOT', 'ms', d.cdf.tpot, d.minSamples),
        timeFigure(d.charts, ctx, 'ttft-time', 'TTFT', 'ms', d.ts.ttft, d.ts.bucket),
        timeFigure(d.charts, ctx, 'tpot-time', 'TPOT', 'ms', d.ts.tpot, d.ts.bucket),
      ),
      embedSection(ctx),
    );
  },
};
