// Leaderboard: the published comparison's columns (provider, model, median TTFT, median
// tokens/s, p95 latency) plus p95/p99, error rate and sample counts, filtered by window,
// region, task and source.

import type { Leaderboard, LeaderboardRow } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMs, fmtPct, fmtRate } from '../format';
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
  board: Leaderboard;
  values: LabelValues;
}

const col = numColumn<LeaderboardRow>;

const kNumColumns: NumColumn<LeaderboardRow>[] = [
  col('ttft_p50', 'TTFT p50 (ms)', (r) => r.ttft_ms?.p50, fmtMs, 'Median time to first token'),
  col('ttft_p95', 'TTFT p95 (ms)', (r) => r.ttft_ms?.p95, fmtMs, '95th percentile time to first token'),
  col('ttft_p99', 'TTFT p99 (ms)', (r) => r.ttft_ms?.p99, fmtMs, '99th percentile time to first token'),
  col('tps_p50', 'Tokens/s p50', (r) => r.decode_tps_p50, fmtRate, 'Median decode speed, 1000 / TPOT p50'),
  col('tpot_p95', 'TPOT p95 (ms)', (r) => r.tpot_ms?.p95, fmtMs, '95th percentile time per output token'),
  col('e2e_p50', 'E2E p50 (ms)', (r) => r.e2e_ms?.p50, fmtMs, 'Median end-to-end latency'),
  col('e2e_p95', 'E2E p95 (ms)', (r) => r.e2e_ms?.p95, fmtMs, '95th percentile end-to-end latency (the comparison\'s "p95 latency")'),
  col('e2e_p99', 'E2E p99 (ms)', (r) => r.e2e_ms?.p99, fmtMs, '99th percentile end-to-end latency'),
  col('e2e500_p95', 'E2E@500 p95 (ms)', (r) => r.e2e500_ms?.p95, fmtMs, 'p95 of TTFT + 499 × TPOT: a 500-token answer, comparable across runs'),
  col('error_rate', 'Errors', (r) => r.error_rate, fmtPct, 'Failed attempts / all attempts'),
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
  return appendNumbers(tr, kNumColumns, row, row.samples, row.insufficient, board.min_samples);
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
      heading('Leaderboard'),
      h(
        'p',
        { class: 'lede' },
        `Latency per provider and model over the last ${board.window}. Medians are the headline; `,
        `tokens/s is decode speed (1000 / TPOT). Cells with fewer than ${fmtCount(board.min_samples)} samples `,
        'are shown as insufficient data.',
      ),
      filterBar(ctx, values, ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'], kDefaultWindow),
      exportLinks([{ label: 'leaderboard', path: 'leaderboard', params: apiParams(ctx.route, kDefaultWindow) }]),
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
