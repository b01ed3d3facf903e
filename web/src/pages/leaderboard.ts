// Leaderboard: the published comparison's columns (provider, model, median TTFT, median
// tokens/s, p95 latency) plus p95/p99, error rate and sample counts, filtered by window,
// region, task and source.

import type { Leaderboard, LeaderboardRow } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMs, fmtPct, fmtRate } from '../format';
import type { Page, PageContext } from '../page';
import { apiParams, href, sharedParams } from '../route';
import {
  dataTable,
  emptyState,
  filterBar,
  insufficientCell,
  loadLabelValues,
  numCell,
  type Column,
  type LabelValues,
} from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  board: Leaderboard;
  values: LabelValues;
}

interface NumColumn extends Column<LeaderboardRow> {
  value: (r: LeaderboardRow) => number | null | undefined;
  format: (v: number) => string;
}

function quantileColumn(
  key: string,
  header: string,
  title: string,
  value: (r: LeaderboardRow) => number | null | undefined,
  format: (v: number) => string = fmtMs,
): NumColumn {
  return { key, header, title, numeric: true, value, format, sort: (r) => value(r) ?? null };
}

const kNumColumns: NumColumn[] = [
  quantileColumn('ttft_p50', 'TTFT p50 (ms)', 'Median time to first token', (r) => r.ttft_ms?.p50),
  quantileColumn('ttft_p95', 'TTFT p95 (ms)', '95th percentile time to first token', (r) => r.ttft_ms?.p95),
  quantileColumn('ttft_p99', 'TTFT p99 (ms)', '99th percentile time to first token', (r) => r.ttft_ms?.p99),
  quantileColumn('tps_p50', 'Tokens/s p50', 'Median decode speed, 1000 / TPOT p50', (r) => r.decode_tps_p50, fmtRate),
  quantileColumn('tpot_p95', 'TPOT p95 (ms)', '95th percentile time per output token', (r) => r.tpot_ms?.p95),
  quantileColumn('e2e_p50', 'E2E p50 (ms)', 'Median end-to-end latency', (r) => r.e2e_ms?.p50),
  quantileColumn('e2e_p95', 'E2E p95 (ms)', '95th percentile end-to-end latency (the comparison\'s "p95 latency")', (r) => r.e2e_ms?.p95),
  quantileColumn('e2e_p99', 'E2E p99 (ms)', '99th percentile end-to-end latency', (r) => r.e2e_ms?.p99),
  quantileColumn('e2e500_p95', 'E2E@500 p95 (ms)', 'p95 of TTFT + 499 × TPOT: a 500-token answer, comparable across runs', (r) => r.e2e500_ms?.p95),
  quantileColumn('error_rate', 'Errors', 'Failed attempts / all attempts', (r) => r.error_rate, fmtPct),
];

function modelLink(ctx: PageContext, row: LeaderboardRow): HTMLAnchorElement {
  const link = href('model', [row.provider, row.model], sharedParams(ctx.route.params));
  return h('a', { href: link, 'data-key': `model:${row.provider}\u0000${row.model}` }, row.model);
}

function renderRow(ctx: PageContext, board: Leaderboard, row: LeaderboardRow): HTMLTableRowElement {
  const tr = h(
    'tr',
    { 'data-provider': row.provider, 'data-model': row.model, class: row.insufficient ? 'is-insufficient' : null },
    h('td', { 'data-col': 'provider', class: 'wide-only' }, row.provider),
    h('th', { scope: 'row', 'data-col': 'model', class: 'sticky' }, modelLink(ctx, row), h('span', { class: 'narrow-only' }, row.provider)),
  );
  if (row.insufficient) {
    tr.appendChild(insufficientCell(kNumColumns.length, row.samples, board.min_samples));
  } else {
    for (const c of kNumColumns) tr.appendChild(numCell(c.key, c.value(row), c.format, row.samples));
  }
  tr.appendChild(h('td', { class: 'num', 'data-col': 'samples', 'data-value': row.samples }, fmtCount(row.samples)));
  return tr;
}

export const leaderboardPage: Page<Data> = {
  title: () => 'Leaderboard',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [board, values] = await Promise.all([
      ctx.get<Leaderboard>('leaderboard', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
    ]);
    return { board, values };
  },

  render(ctx, { board, values }) {
    const columns: Column<LeaderboardRow>[] = [
      { key: 'provider', header: 'Provider', className: 'wide-only', sort: (r) => r.provider },
      { key: 'model', header: 'Model', className: 'sticky', sort: (r) => r.model },
      ...kNumColumns,
      { key: 'samples', header: 'Samples', title: 'Attempts measured (n)', numeric: true, sort: (r) => r.samples },
    ];
    const sufficient = board.rows.filter((r) => !r.insufficient).length;
    return h(
      'section',
      { class: 'page' },
      h('h1', { tabindex: -1 }, 'Leaderboard'),
      h(
        'p',
        { class: 'lede' },
        `Latency per provider and model over the last ${board.window}. Medians are the headline; `,
        `tokens/s is decode speed (1000 / TPOT). Cells with fewer than ${fmtCount(board.min_samples)} samples `,
        'are shown as insufficient data.',
      ),
      filterBar(ctx, values, ['window', 'client_region', 'upstream_region', 'task', 'source'], kDefaultWindow),
      h(
        'p',
        { class: 'meta' },
        `${fmtCount(board.rows.length)} models, ${fmtCount(sufficient)} with enough data · generated `,
        h('time', { datetime: board.generated_at }, new Date(board.generated_at).toLocaleTimeString()),
      ),
      board.rows.length === 0
        ? emptyState('No measurements match these filters in this window.')
        : dataTable({
            id: 'leaderboard',
            caption: `Leaderboard, ${board.window} window`,
            columns,
            rows: board.rows,
            insufficient: (r) => r.insufficient,
            renderRow: (r) => renderRow(ctx, board, r),
          }),
    );
  },
};
