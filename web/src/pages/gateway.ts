// Gateway: what `tokenradar serve` did for its clients: cache hits, fallbacks and hedges,
// statuses, and the latency the gateway itself added.

import type { GatewayStats } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMsUnit, fmtN, fmtPct } from '../format';
import type { Page } from '../page';
import { apiParams } from '../route';
import { emptyState, filterBar, heading, insufficientText, loadLabelValues, statTile, type LabelValues } from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  gw: GatewayStats;
  values: LabelValues;
}

function sum(o: Record<string, number>): number {
  return Object.values(o).reduce((a, b) => a + b, 0);
}

/** A breakdown as a table with a bar per row: the numbers stay text, the bars are decoration. */
function breakdown(key: string, title: string, counts: Record<string, number>): HTMLElement {
  const total = sum(counts);
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return h(
    'figure',
    { class: 'card', 'data-figure': key },
    h('figcaption', null, title, h('span', { class: 'n' }, ` ${fmtN(total)}`)),
    h(
      'table',
      { class: 'data compact breakdown', id: `gw-${key}` },
      h('caption', { class: 'sr-only' }, title),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'kind'), h('th', { scope: 'col', class: 'num' }, 'count'), h('th', { scope: 'col', class: 'num' }, 'share'), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'bar')))),
      h(
        'tbody',
        null,
        entries.map(([name, n]) => {
          const share = total > 0 ? n / total : 0;
          return h(
            'tr',
            { 'data-kind': name },
            h('th', { scope: 'row' }, name),
            h('td', { class: 'num', 'data-col': 'count', 'data-value': n }, fmtCount(n)),
            h('td', { class: 'num' }, fmtPct(share)),
            h('td', { class: 'bar-cell', 'aria-hidden': 'true' }, h('span', { class: 'bar', style: `width:${(share * 100).toFixed(1)}%` })),
          );
        }),
      ),
    ),
  );
}

export const gatewayPage: Page<Data> = {
  title: () => 'Gateway',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [gw, values] = await Promise.all([
      ctx.get<GatewayStats>('gateway', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
    ]);
    return { gw, values };
  },

  render(ctx, { gw, values }) {
    const cacheHits = (gw.cache['exact'] ?? 0) + (gw.cache['semantic'] ?? 0);
    const cacheTotal = sum(gw.cache);
    const fallbacks = gw.route['fallback'] ?? 0;
    const hedges = gw.route['hedge'] ?? 0;
    const ov = gw.overhead_ms;
    const ovN = ov?.samples ?? 0;
    const ovInsufficient = !ov || ov.insufficient === true || ov.p50 === null;
    const ms = (v: number | null | undefined) => (v === null || v === undefined ? '–' : fmtMsUnit(v));
    return h(
      'section',
      { class: 'page' },
      heading('Gateway'),
      h('p', { class: 'lede' }, `What the gateway did in the last ${gw.window}: cache hits, fallbacks and hedges, and the time it added to each request.`),
      filterBar(ctx, values, ['window'], kDefaultWindow),
      gw.attempts === 0
        ? emptyState('No gateway traffic in this window.')
        : [
            h(
              'dl',
              { class: 'stats' },
              statTile('requests', 'Requests', fmtCount(gw.requests), gw.requests),
              statTile('attempts', 'Upstream attempts', fmtCount(gw.attempts), gw.attempts),
              statTile('cache_hit_rate', 'Cache hit rate', cacheTotal > 0 ? fmtPct(cacheHits / cacheTotal) : '–', cacheTotal > 0 ? cacheHits / cacheTotal : null, `${fmtCount(cacheHits)} of ${fmtCount(cacheTotal)}`),
              statTile('fallbacks', 'Fallbacks', fmtCount(fallbacks), fallbacks, gw.attempts > 0 ? fmtPct(fallbacks / gw.attempts) : undefined),
              statTile('hedges', 'Hedged attempts', fmtCount(hedges), hedges),
              ovInsufficient
                ? h('div', { class: 'stat insufficient', 'data-stat': 'overhead_p50' }, h('dt', null, 'Overhead p50'), h('dd', null, insufficientText(ovN, undefined)))
                : statTile('overhead_p50', 'Overhead p50', ms(ov.p50), ov.p50, fmtN(ovN)),
              ovInsufficient ? null : statTile('overhead_p95', 'Overhead p95', ms(ov.p95), ov.p95, fmtN(ovN)),
              ovInsufficient ? null : statTile('overhead_p99', 'Overhead p99', ms(ov.p99), ov.p99, fmtN(ovN)),
            ),
            h(
              'div',
              { class: 'grid-3' },
              breakdown('cache', 'Cache', gw.cache),
              breakdown('route', 'Route', gw.route),
              breakdown('status', 'Status', gw.status),
            ),
          ],
    );
  },
};
