// Compare: 2-4 models side by side. Their TTFT and TPOT CDFs overlaid, their TTFT by hour of
// day, and the difference in words, computed from the numbers on screen and never from a
// cell with too few samples.

import type { Distribution, DistributionSeries, Heatmap, HeatmapCell, Leaderboard, LeaderboardRow } from '../api';
import type * as Charts from '../charts';
import { h } from '../dom';
import { fmtCount, fmtMs, fmtN } from '../format';
import type { Page, PageContext } from '../page';
import { apiParams, href, sharedParams, withParam } from '../route';
import { emptyState, exportLinks, filterBar, heading, insufficientText, loadLabelValues, numCell, type ExportSource, type LabelValues } from '../widgets';

const kDefaultWindow = '7d';
const kMax = 4;
// Hour of day in UTC: the sentence names hours, and UTC means the same to every reader.
const kTz = 'UTC';

interface Pick {
  provider: string;
  model: string;
}

interface Data {
  charts: typeof Charts | null;
  board: Leaderboard;
  picks: Pick[];
  /** true when the URL chose no models and the page shows the fastest two. */
  defaulted: boolean;
  ttft: Distribution | null;
  tpot: Distribution | null;
  hours: Heatmap | null;
  values: LabelValues;
  sources: ExportSource[];
}

const keyOf = (p: Pick) => `${p.provider}/${p.model}`;
const same = (a: Pick, b: Pick) => a.provider === b.provider && a.model === b.model;

/** `models=prov/model,prov/model`: the provider is up to the first '/', the model the rest. */
export function parseModels(value: string | null): Pick[] {
  const out: Pick[] = [];
  for (const item of (value ?? '').split(',')) {
    const i = item.indexOf('/');
    if (i <= 0 || i === item.length - 1) continue;
    const p = { provider: item.slice(0, i), model: item.slice(i + 1) };
    if (!out.some((o) => same(o, p))) out.push(p);
  }
  return out.slice(0, kMax);
}

function withModels(params: URLSearchParams, picks: readonly Pick[]): URLSearchParams {
  return withParam(params, 'models', picks.map(keyOf).join(','));
}

function selectionParams(base: URLSearchParams, picks: readonly Pick[], extra: Record<string, string>): URLSearchParams {
  const p = new URLSearchParams(base);
  for (const x of picks) p.append('provider', x.provider);
  for (const x of picks) p.append('model', x.model);
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  return p;
}

function label(picks: readonly Pick[], p: Pick): string {
  // The model name alone unless two picks share it.
  return picks.filter((x) => x.model === p.model).length > 1 ? `${p.model} (${p.provider})` : p.model;
}

function scopeText(ctx: PageContext, window: string): string {
  const p = ctx.route.params;
  const parts = [window];
  const cr = p.get('client_region');
  const ur = p.get('upstream_region');
  if (!cr && !ur) parts.push('all regions');
  if (cr) parts.push(`from ${cr}`);
  if (ur) parts.push(`served from ${ur}`);
  const task = p.get('task');
  const source = p.get('source');
  if (task) parts.push(`task ${task}`);
  if (source) parts.push(`source ${source}`);
  return parts.join(', ');
}

const ratioText = (r: number) => `${r.toFixed(1)}x`;

interface Sentence {
  key: string;
  text: string;
}

/** The difference in words for one metric: every other model against the one with the lowest
 *  p50. Models with insufficient data are named as such, never compared. */
export function metricSentences(
  what: string,
  picks: readonly Pick[],
  rows: ReadonlyArray<LeaderboardRow | undefined>,
  value: (r: LeaderboardRow) => number | null | undefined,
  scope: string,
  minSamples: number,
): Sentence[] {
  const out: Sentence[] = [];
  const usable: Array<{ pick: Pick; row: LeaderboardRow; v: number }> = [];
  picks.forEach((pick, i) => {
    const row = rows[i];
    const v = row && !row.insufficient ? value(row) : null;
    if (!row) out.push({ key: `none:${keyOf(pick)}`, text: `${label(picks, pick)} has no measurements here (${scope}).` });
    else if (row.insufficient) out.push({ key: `insufficient:${keyOf(pick)}`, text: `${label(picks, pick)}: ${insufficientText(row.samples, minSamples)}, so no ${what} comparison.` });
    else if (v === null || v === undefined || !(v > 0)) out.push({ key: `novalue:${keyOf(pick)}`, text: `${label(picks, pick)} has no ${what} p50 here.` });
    else usable.push({ pick, row, v });
  });
  if (usable.length < 2) return out;
  const base = usable.reduce((a, b) => (b.v < a.v ? b : a));
  for (const o of usable) {
    if (o === base) continue;
    const r = o.v / base.v;
    const a = `${label(picks, o.pick)}'s ${what} p50 (${fmtMs(o.v)} ms, ${fmtN(o.row.samples)})`;
    const b = `${label(picks, base.pick)}'s (${fmtMs(base.v)} ms, ${fmtN(base.row.samples)})`;
    out.push({
      key: `ratio:${what}:${keyOf(o.pick)}`,
      text: r < 1.05 ? `${a} is within 5% of ${b} (${scope}).` : `${a} is ${ratioText(r)} ${b} (${scope}).`,
    });
  }
  return out;
}

function hourLabel(hr: number): string {
  return `${String(hr).padStart(2, '0')}:00`;
}

/** Per hour of day, the value of `p` (null when the cell is insufficient or missing). */
function hourValues(cells: readonly HeatmapCell[], p: Pick): Array<number | null> {
  const out: Array<number | null> = new Array(24).fill(null);
  for (const c of cells) {
    if (c.provider === p.provider && c.model === p.model && !c.insufficient && c.value !== null && c.value > 0) out[c.hour] = c.value;
  }
  return out;
}

/** Where the gap between the slower and the faster model is largest: the hour of the largest
 *  ratio and its neighbours within 10% of it, from hours where both have enough samples; only
 *  when at least 12 hours compare. */
export function gapHours(slow: ReadonlyArray<number | null>, fast: ReadonlyArray<number | null>): { from: number; to: number; lo: number; hi: number; hours: number } | null {
  const ratio = slow.map((s, i) => {
    const f = fast[i];
    return s !== null && f !== null && f !== undefined && f > 0 ? s / f : null;
  });
  const hours = ratio.filter((r) => r !== null).length;
  if (hours < 12) return null;
  let best = -1;
  ratio.forEach((r, i) => {
    if (r !== null && (best < 0 || r > ratio[best]!)) best = i;
  });
  const max = ratio[best]!;
  let from = best;
  let to = best;
  while (from > 0 && ratio[from - 1] !== null && ratio[from - 1]! >= 0.9 * max) from--;
  while (to < 23 && ratio[to + 1] !== null && ratio[to + 1]! >= 0.9 * max) to++;
  const span = ratio.slice(from, to + 1) as number[];
  return { from, to, lo: Math.min(...span), hi: max, hours };
}

function hourSentences(picks: readonly Pick[], rows: ReadonlyArray<LeaderboardRow | undefined>, cells: readonly HeatmapCell[]): Sentence[] {
  const usable = picks
    .map((pick, i) => ({ pick, v: rows[i] && !rows[i]!.insufficient ? rows[i]!.ttft_ms?.p50 ?? null : null }))
    .filter((x): x is { pick: Pick; v: number } => x.v !== null && x.v > 0);
  if (usable.length < 2) return [];
  const base = usable.reduce((a, b) => (b.v < a.v ? b : a));
  const out: Sentence[] = [];
  for (const o of usable) {
    if (o === base) continue;
    const g = gapHours(hourValues(cells, o.pick), hourValues(cells, base.pick));
    if (!g || g.hi < 1.05) continue;
    const range = `at ${hourLabel(g.from)}–${hourLabel((g.to + 1) % 24)} ${kTz}`;
    const size = g.lo.toFixed(1) === g.hi.toFixed(1) ? ratioText(g.hi) : `${g.lo.toFixed(1)}–${ratioText(g.hi)}`;
    out.push({
      key: `hours:${keyOf(o.pick)}`,
      text: `The TTFT p50 gap between ${label(picks, o.pick)} and ${label(picks, base.pick)} is largest ${range} (${size}; ${g.hours} of 24 hours with enough samples for both).`,
    });
  }
  return out;
}

function picker(ctx: PageContext, board: Leaderboard, picks: readonly Pick[]): HTMLElement {
  const full = picks.length >= kMax;
  const choices: Pick[] = board.rows.map((r) => ({ provider: r.provider, model: r.model }));
  // A picked model without data in this window stays listed, so it can be unticked.
  for (const p of picks) if (!choices.some((c) => same(c, p))) choices.push(p);
  return h(
    'fieldset',
    { class: 'picker' },
    h('legend', null, `Models (2 to ${kMax})`),
    choices.map((c) => {
      const checked = picks.some((p) => same(p, c));
      const id = `pick-${keyOf(c).replace(/[^\w-]/g, '_')}`;
      const row = board.rows.find((r) => same(r, c));
      return h(
        'label',
        { class: 'pick', for: id },
        h('input', {
          type: 'checkbox',
          id,
          checked,
          disabled: !checked && full,
          'data-key': `pick:${keyOf(c)}`,
          'data-provider': c.provider,
          'data-model': c.model,
          onchange: (e: Event) => {
            const on = (e.target as HTMLInputElement).checked;
            const next = on ? [...picks, c] : picks.filter((p) => !same(p, c));
            ctx.setParams(withModels(ctx.route.params, next));
          },
        }),
        ` ${c.model} `,
        h('span', { class: 'provider-name' }, c.provider),
        row ? h('span', { class: 'n' }, ` ${fmtN(row.samples)}`) : null,
      );
    }),
    full ? h('p', { class: 'muted' }, `${kMax} chosen: untick one to choose another.`) : null,
  );
}

function numbersTable(picks: readonly Pick[], rows: ReadonlyArray<LeaderboardRow | undefined>, minSamples: number): HTMLElement {
  const cols: Array<[string, string, (r: LeaderboardRow) => number | null | undefined]> = [
    ['ttft_p50', 'TTFT p50 (ms)', (r) => r.ttft_ms?.p50],
    ['ttft_p95', 'TTFT p95 (ms)', (r) => r.ttft_ms?.p95],
    ['tpot_p50', 'TPOT p50 (ms)', (r) => r.tpot_ms?.p50],
    ['tpot_p95', 'TPOT p95 (ms)', (r) => r.tpot_ms?.p95],
  ];
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Chosen models', 'data-key': 'table:compare' },
    h(
      'table',
      { id: 'compare', class: 'data' },
      h('caption', null, 'The chosen models'),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Model'), cols.map(([k, t]) => h('th', { scope: 'col', class: 'num', 'data-col': k }, t)), h('th', { scope: 'col', class: 'num' }, 'Samples'))),
      h(
        'tbody',
        null,
        picks.map((p, i) => {
          const r = rows[i];
          const tr = h('tr', { 'data-provider': p.provider, 'data-model': p.model, class: r?.insufficient ? 'is-insufficient' : null }, h('th', { scope: 'row' }, p.model, ' ', h('span', { class: 'provider-name' }, p.provider)));
          if (!r) tr.appendChild(h('td', { colspan: cols.length + 1, class: 'empty' }, 'no measurements here'));
          else {
            if (r.insufficient) tr.appendChild(h('td', { class: 'insufficient', colspan: cols.length, 'data-col': 'insufficient' }, insufficientText(r.samples, minSamples)));
            else for (const [k, , v] of cols) tr.appendChild(numCell(k, v(r), fmtMs, r.samples));
            tr.appendChild(h('td', { class: 'num', 'data-col': 'samples', 'data-value': r.samples }, fmtCount(r.samples)));
          }
          return tr;
        }),
      ),
    ),
  );
}

function cdfFigure(d: Data, ctx: PageContext, key: string, title: string, dist: Distribution | null, minSamples: number): HTMLElement {
  const found = d.picks.map((p) => ({ p, s: dist?.series.find((s) => same(s, p)) }));
  const drawable = found.filter((x): x is { p: Pick; s: DistributionSeries } => !!x.s && !x.s.insufficient && x.s.cdf.length > 0);
  const notes = found
    .filter((x) => !drawable.includes(x as { p: Pick; s: DistributionSeries }))
    .map((x) => h('li', { class: 'insufficient' }, `${label(d.picks, x.p)}: ${x.s ? insufficientText(x.s.samples, minSamples) : 'no data'}`));
  const body: Node[] = [];
  if (drawable.length === 0 || !d.charts) body.push(emptyState('Nothing to draw.'));
  else {
    const at = (s: DistributionSeries, q: number) => s.cdf.find(([, f]) => f >= q)?.[0];
    const summary = `${title} CDFs: ${drawable.map(({ p, s }) => `${label(d.picks, p)} p50 ${fmtMs(at(s, 0.5) ?? NaN)} ms, p95 ${fmtMs(at(s, 0.95) ?? NaN)} ms, ${fmtN(s.samples)}`).join('; ')}`;
    const chart = d.charts.cdfChart(key, `${title} (ms)`, drawable.map(({ p, s }) => ({ label: label(d.picks, p), points: s.cdf })), summary);
    ctx.onDispose(chart.dispose);
    body.push(chart.el, h('p', { class: 'sr-only' }, summary));
  }
  return h(
    'figure',
    { class: 'card', 'data-figure': key },
    h('figcaption', null, `${title} distribution (CDF)`),
    body,
    notes.length ? h('ul', { class: 'notes' }, notes) : null,
  );
}

function hourFigure(d: Data, ctx: PageContext): HTMLElement {
  const cells = d.hours?.cells ?? [];
  const lines = d.picks.map((p) => ({ label: label(d.picks, p), values: hourValues(cells, p) }));
  const body: Node[] = [];
  if (!d.charts || lines.every((l) => l.values.every((v) => v === null))) body.push(emptyState('No hour has enough samples.'));
  else {
    const summary = `TTFT p50 by hour of day (${kTz}): ${lines.map((l) => `${l.label} ${l.values.filter((v) => v !== null).length} of 24 hours with enough samples`).join('; ')}`;
    const chart = d.charts.hourChart('ttft-hours', 'TTFT p50 (ms)', kTz, lines, summary);
    ctx.onDispose(chart.dispose);
    body.push(chart.el);
  }
  const cellOf = (p: Pick, hr: number) => cells.find((c) => c.hour === hr && c.provider === p.provider && c.model === p.model);
  body.push(
    h(
      'details',
      { class: 'chart-data' },
      h('summary', { 'data-key': 'data:compare-hours' }, 'TTFT by hour: data table'),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'data compact', id: 'compare-hours' },
          h('caption', { class: 'sr-only' }, `TTFT p50 by hour of day, ${kTz}`),
          h('thead', null, h('tr', null, h('th', { scope: 'col' }, `hour (${kTz})`), d.picks.map((p) => h('th', { scope: 'col', class: 'num' }, `${label(d.picks, p)} (ms)`)))),
          h(
            'tbody',
            null,
            Array.from({ length: 24 }, (_, hr) =>
              h(
                'tr',
                null,
                h('th', { scope: 'row' }, hourLabel(hr)),
                d.picks.map((p) => {
                  const c = cellOf(p, hr);
                  if (!c) return h('td', { class: 'num none' }, '–');
                  if (c.insufficient || c.value === null) return h('td', { class: 'num insufficient', title: fmtN(c.samples) }, fmtN(c.samples));
                  return h('td', { class: 'num', 'data-value': c.value, title: fmtN(c.samples) }, fmtMs(c.value));
                }),
              ),
            ),
          ),
        ),
      ),
    ),
  );
  return h('figure', { class: 'card', 'data-figure': 'ttft-hours' }, h('figcaption', null, `TTFT p50 by hour of day (${kTz})`), body);
}

export const comparePage: Page<Data> = {
  title: () => 'Compare',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const window = params.get('window') ?? kDefaultWindow;
    const [board, values] = await Promise.all([ctx.get<Leaderboard>('leaderboard', params), loadLabelValues(ctx, window)]);
    let picks = parseModels(ctx.route.params.get('models'));
    const defaulted = picks.length === 0;
    if (defaulted) picks = board.rows.filter((r) => !r.insufficient).slice(0, 2).map((r) => ({ provider: r.provider, model: r.model }));
    const sources: ExportSource[] = [{ label: 'leaderboard', path: 'leaderboard', params }];
    if (picks.length === 0) return { charts: null, board, picks, defaulted, ttft: null, tpot: null, hours: null, values, sources };
    const ttftP = selectionParams(params, picks, { metric: 'ttft' });
    const tpotP = selectionParams(params, picks, { metric: 'tpot' });
    const hourP = selectionParams(params, picks, { by: 'model', metric: 'ttft', q: '0.5', tz: kTz });
    const [charts, ttft, tpot, hours] = await Promise.all([
      import('../charts'),
      ctx.get<Distribution>('distribution', ttftP),
      ctx.get<Distribution>('distribution', tpotP),
      ctx.get<Heatmap>('heatmap', hourP),
    ]);
    sources.push({ label: 'TTFT CDFs', path: 'distribution', params: ttftP }, { label: 'TPOT CDFs', path: 'distribution', params: tpotP }, { label: 'TTFT by hour', path: 'heatmap', params: hourP });
    return { charts, board, picks, defaulted, ttft, tpot, hours, values, sources };
  },

  render(ctx, d) {
    const window = apiParams(ctx.route, kDefaultWindow).get('window') ?? kDefaultWindow;
    const rows = d.picks.map((p) => d.board.rows.find((r) => same(r, p)));
    const scope = scopeText(ctx, window);
    const sentences =
      d.picks.length < 2
        ? []
        : [
            ...metricSentences('TTFT', d.picks, rows, (r) => r.ttft_ms?.p50, scope, d.board.min_samples),
            ...hourSentences(d.picks, rows, d.hours?.cells ?? []),
            ...metricSentences('TPOT', d.picks, rows, (r) => r.tpot_ms?.p50, scope, d.board.min_samples).filter((s) => s.key.startsWith('ratio:')),
          ];
    return h(
      'section',
      { class: 'page' },
      heading('Compare'),
      h('p', { class: 'lede' }, 'Two to four models side by side: their distributions, their day, and the difference in words.'),
      filterBar(ctx, d.values, ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'], kDefaultWindow),
      exportLinks(d.sources),
      picker(ctx, d.board, d.picks),
      d.defaulted && d.picks.length ? h('p', { class: 'muted', 'data-defaulted': '' }, 'None chosen: showing the two fastest by TTFT p50.') : null,
      d.picks.length < 2
        ? emptyState('Choose at least two models.')
        : h(
            'div',
            null,
            h('div', { class: 'verdict', 'aria-live': 'polite', id: 'verdict' }, sentences.length ? sentences.map((s) => h('p', { 'data-sentence': s.key }, s.text)) : h('p', null, 'No difference can be stated from these numbers.')),
            numbersTable(d.picks, rows, d.board.min_samples),
            h(
              'p',
              { class: 'muted' },
              'Open a model: ',
              d.picks.map((p, i) => [i ? ', ' : '', h('a', { href: href('model', [p.provider, p.model], sharedParams(ctx.route.params)) }, label(d.picks, p))]),
            ),
            h(
              'div',
              { class: 'grid-2' },
              cdfFigure(d, ctx, 'ttft-cdf', 'TTFT', d.ttft, d.board.min_samples),
              cdfFigure(d, ctx, 'tpot-cdf', 'TPOT', d.tpot, d.board.min_samples),
            ),
            hourFigure(d, ctx),
          ),
    );
  },
};
