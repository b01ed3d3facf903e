// Regions: latency per client region x upstream region x provider x model.

import type { RegionRow, Regions } from '../api';
import { h } from '../dom';
import { fmtMs, fmtPct } from '../format';
import type { Page, PageContext } from '../page';
import { apiParams, href, sharedParams } from '../route';
import {
  appendNumbers,
  dataTable,
  emptyState,
  exportLinks,
  filterBar,
  heading,
  loadLabelValues,
  numColumn,
  type Column,
  type LabelValues,
  type NumColumn,
} from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  regions: Regions;
  values: LabelValues;
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

export const regionsPage: Page<Data> = {
  title: () => 'Regions',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [regions, values] = await Promise.all([
      ctx.get<Regions>('regions', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
    ]);
    return { regions, values };
  },

  render(ctx, { regions, values }) {
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
      filterBar(ctx, values, ['window', 'client_region', 'upstream_region', 'task', 'source'], kDefaultWindow),
      exportLinks([{ label: 'regions', path: 'regions', params: apiParams(ctx.route, kDefaultWindow) }]),
      regions.rows.length === 0
        ? emptyState('No measurements match these filters in this window.')
        : dataTable({
            id: 'regions',
            caption: `Latency by region, ${window} window`,
            columns,
            rows: regions.rows,
            insufficient: (r) => r.insufficient,
            renderRow: (r) => renderRow(ctx, r),
          }),
    );
  },
};
