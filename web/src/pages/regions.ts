// Regions: latency per client region x upstream region x provider x model.

import type { RegionRow, Regions } from '../api';
import { h } from '../dom';
import { fmtMs, fmtMsUnit, fmtN, fmtPct } from '../format';
import type * as WorldMap from '../map';
import type { Page, PageContext } from '../page';
import { apiParams, href, sharedParams, withParam } from '../route';
import { colour, kStops, logScale } from '../scale';
import {
  appendNumbers,
  dataTable,
  emptyState,
  exportLinks,
  filterBar,
  heading,
  insufficientText,
  loadLabelValues,
  numColumn,
  select,
  type Column,
  type LabelValues,
  type NumColumn,
} from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  regions: Regions;
  values: LabelValues;
  // The topology and d3-geo load with this page only (a chunk like uPlot's).
  map: typeof WorldMap;
}

function errorRate(r: RegionRow): number | null {
  return r.samples > 0 ? r.errors / r.samples : null;
}

const col = numColumn<RegionRow>;

const kNumColumns: NumColumn<RegionRow>[] = [
  col('ttft_p50', 'TTFT p50 (ms)', (r) => r.ttft_ms?.p50, fmtMs),
  col('ttft_p95', 'TTFT p95 (ms)', (r) => r.ttft_ms?.p95, fmtMs),
  col('ttft_p99', 'TTFT p99 (ms)', (r) => r.ttft_ms?.p99, fmtMs),
  col('e2e_p50', 'E2E p50 (ms)', (r) => r.e2e_ms?.p50, fmtMs),
  col('e2e_p95', 'E2E p95 (ms)', (r) => r.e2e_ms?.p95, fmtMs),
  col('error_rate', 'Errors', errorRate, fmtPct, 'Failed attempts / all attempts'),
];

function region(v: string): string {
  return v === '' ? '(unknown)' : v;
}

function renderRow(ctx: PageContext, r: RegionRow): HTMLTableRowElement {
  const tr = h(
    'tr',
    {
      'data-client-region': r.client_region,
      'data-upstream-region': r.upstream_region,
      'data-provider': r.provider,
      'data-model': r.model,
      class: r.insufficient ? 'is-insufficient' : null,
    },
    h('td', { 'data-col': 'client_region' }, region(r.client_region)),
    h('td', { 'data-col': 'upstream_region' }, region(r.upstream_region)),
    h('td', { 'data-col': 'provider' }, r.provider),
    h('td', { 'data-col': 'model' }, h('a', { href: href('model', [r.provider, r.model], sharedParams(ctx.route.params)), 'data-key': `model:${[r.client_region, r.upstream_region, r.provider, r.model].join('\u0000')}` }, r.model)),
  );
  return appendNumbers(tr, kNumColumns, r, r.samples, r.insufficient);
}

// ---------------------------------------------------------------------------- the map

const kMapMetrics = [
  { value: 'ttft_p50', label: 'TTFT p50', get: (r: RegionRow) => r.ttft_ms?.p50 },
  { value: 'ttft_p95', label: 'TTFT p95', get: (r: RegionRow) => r.ttft_ms?.p95 },
  { value: 'e2e_p50', label: 'E2E p50', get: (r: RegionRow) => r.e2e_ms?.p50 },
] as const;

function mostSamples(rows: readonly RegionRow[], key: (r: RegionRow) => string): string[] {
  const n = new Map<string, number>();
  for (const r of rows) n.set(key(r), (n.get(key(r)) ?? 0) + r.samples);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k]) => k);
}

/** The map's choices, from the hash (map_model, map_metric, map_by, map_other) or defaults:
 *  the model and the other side's region with the most samples. One row per place, so every
 *  colour is one row's number and no quantiles are merged. */
export function mapSelection(params: URLSearchParams, rows: readonly RegionRow[]) {
  const models = mostSamples(rows, (r) => JSON.stringify([r.provider, r.model]));
  const model = models.includes(params.get('map_model') ?? '') ? params.get('map_model')! : models[0] ?? '';
  const metric = kMapMetrics.find((m) => m.value === params.get('map_metric')) ?? kMapMetrics[0];
  const by: 'client' | 'upstream' = params.get('map_by') === 'upstream' ? 'upstream' : 'client';
  const here = (r: RegionRow) => (by === 'client' ? r.client_region : r.upstream_region);
  const other = (r: RegionRow) => (by === 'client' ? r.upstream_region : r.client_region);
  const mine = rows.filter((r) => JSON.stringify([r.provider, r.model]) === model);
  const others = mostSamples(mine, other);
  const otherValue = others.includes(params.get('map_other') ?? '\u0000') ? params.get('map_other')! : others[0] ?? '';
  const shown = mine.filter((r) => other(r) === otherValue);
  return { models, model, metric, by, here, others, otherValue, shown };
}

function mapSection(ctx: PageContext, map: typeof WorldMap, rows: readonly RegionRow[]): HTMLElement {
  const params = ctx.route.params;
  const sel = mapSelection(params, rows);
  const set = (key: string) => (v: string) => ctx.setParams(withParam(params, key, v));
  const scale = logScale(sel.shown.filter((r) => !r.insufficient).map((r) => sel.metric.get(r) ?? 0));
  const items = sel.shown.map((r) => {
    const v = r.insufficient ? null : sel.metric.get(r) ?? null;
    const label = region(sel.here(r));
    return {
      label,
      value: v,
      fill: v === null || !(v > 0) ? null : colour(scale.at(v)).bg,
      title: v === null ? `${label}: ${r.insufficient ? insufficientText(r.samples, undefined) : 'no value'}` : `${label}: ${sel.metric.label} ${fmtMsUnit(v)}, ${fmtN(r.samples)}`,
    };
  });
  const [provider = '', model = ''] = sel.model ? (JSON.parse(sel.model) as [string, string]) : [];
  const otherName = sel.by === 'client' ? 'upstream region' : 'client region';
  const what = `${sel.metric.label} of ${model} (${provider}) by ${sel.by} region, ${otherName} ${region(sel.otherValue)}`;
  const { svg, unplaced } = map.worldMap(items, `Map: ${what}. The table of regions has every number.`, 'regions');
  const stops = kStops.map((c) => `rgb(${c.join(' ')})`).join(', ');
  return h(
    'figure',
    { class: 'card map-card', 'data-figure': 'map', 'data-model': sel.model, 'data-metric': sel.metric.value, 'data-by': sel.by, 'data-other': sel.otherValue },
    h('figcaption', null, 'Map: ', what),
    h(
      'form',
      { class: 'filters map-controls', 'aria-label': 'Map', onsubmit: (e: Event) => e.preventDefault() },
      select('map_model', 'Model', sel.model, sel.models.map((m) => {
        const [p, mo] = JSON.parse(m) as [string, string];
        return { value: m, label: `${mo} (${p})` };
      }), set('map_model')),
      select('map_metric', 'Metric', sel.metric.value, kMapMetrics.map((m) => ({ value: m.value, label: m.label })), set('map_metric')),
      select('map_by', 'Places', sel.by, [{ value: 'client', label: 'client regions' }, { value: 'upstream', label: 'upstream regions' }], (v) => ctx.setParams(withParam(withParam(params, 'map_by', v), 'map_other', ''))),
      select('map_other', sel.by === 'client' ? 'Upstream region' : 'Client region', sel.otherValue, sel.others.map((o) => ({ value: o, label: region(o) })), set('map_other')),
    ),
    svg,
    h(
      'div',
      { class: 'legend map-legend' },
      h('span', { class: 'legend-item' }, scale.hi > 0 ? fmtMsUnit(scale.lo) : null, h('span', { class: 'ramp', style: `background:linear-gradient(to right, ${stops})`, 'aria-hidden': 'true' }), scale.hi > 0 ? fmtMsUnit(scale.hi) : null, h('span', { class: 'sr-only' }, ' (log scale: dark is fast, yellow is slow)')),
      h('span', { class: 'legend-item' }, h('span', { class: 'swatch insufficient', 'aria-hidden': 'true' }), 'insufficient data'),
      h('span', { class: 'legend-item' }, h('span', { class: 'map-dot', 'aria-hidden': 'true' }), 'cloud region or continent'),
    ),
    unplaced.length
      ? h('p', { class: 'muted', 'data-unplaced': unplaced.map((u) => u.label).join(',') }, 'Not on the map: ', unplaced.map((u, i) => [i ? '; ' : '', u.title]))
      : null,
  );
}

export const regionsPage: Page<Data> = {
  title: () => 'Regions',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [regions, values, map] = await Promise.all([
      ctx.get<Regions>('regions', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
      import('../map'),
    ]);
    return { regions, values, map };
  },

  render(ctx, { regions, values, map }) {
    const window = apiParams(ctx.route, kDefaultWindow).get('window') ?? kDefaultWindow;
    const columns: Column<RegionRow>[] = [
      { key: 'client_region', header: 'Client region', sort: (r) => r.client_region },
      { key: 'upstream_region', header: 'Upstream region', sort: (r) => r.upstream_region },
      { key: 'provider', header: 'Provider', sort: (r) => r.provider },
      { key: 'model', header: 'Model', sort: (r) => r.model },
      ...kNumColumns,
      { key: 'samples', header: 'Samples', numeric: true, sort: (r) => r.samples },
    ];
    return h(
      'section',
      { class: 'page' },
      heading('Regions'),
      h('p', { class: 'lede' }, 'Where the client sits and where the provider answered from: the same model can be fast from one region and slow from another.'),
      filterBar(ctx, values, ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'], kDefaultWindow),
      exportLinks([{ label: 'regions', path: 'regions', params: apiParams(ctx.route, kDefaultWindow) }]),
      regions.rows.length === 0
        ? emptyState('No measurements match these filters in this window.')
        : h('div', { class: 'regions-layout' }, mapSection(ctx, map, regions.rows), dataTable({
            id: 'regions',
            caption: `Latency by region, ${window} window`,
            columns,
            rows: regions.rows,
            insufficient: (r) => r.insufficient,
            renderRow: (r) => renderRow(ctx, r),
          })),
    );
  },
};
