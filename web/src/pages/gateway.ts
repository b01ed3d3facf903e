// Gateway: what `tokenradar serve` did for its clients: cache hits, fallbacks and hedges,
// statuses, the latency the gateway itself added, and TTFT with and without a provider
// prompt-cache hit.

import type { GatewayStats, ProviderCacheSide, ProviderCacheStats } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMsUnit, fmtN, fmtPct } from '../format';
import type { Page } from '../page';
import { apiParams } from '../route';
import { emptyState, filterBar, heading, insufficientText, loadLabelValues, statTile, type LabelValues } from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  gw: GatewayStats;
  values: LabelValues;
  /** null when the server does not answer it (an observatory without a gateway). */
  providerCache: ProviderCacheStats | null;
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

const msOrDash = (v: number | null | undefined) => (v === null || v === undefined ? '–' : fmtMsUnit(v));

function msCell(col: string, v: number | null): HTMLElement {
  return h('td', { class: 'num', 'data-col': col, 'data-value': v }, msOrDash(v));
}

function sideCells(prefix: string, side: ProviderCacheSide): HTMLElement[] {
  return [
    h('td', { class: 'num', 'data-col': `${prefix}_samples`, 'data-value': side.samples }, fmtCount(side.samples)),
    msCell(`${prefix}_p50`, side.p50_ms),
    msCell(`${prefix}_mean`, side.mean_ms),
  ];
}

/** TTFT of streamed attempts whose upstream reported cached prompt tokens (hit) or none (miss),
 *  per provider and model, from the gateway's live metrics. */
function providerCacheFigure(stats: ProviderCacheStats | null): HTMLElement {
  const caption = 'Provider prompt cache: TTFT with and without a hit';
  const body =
    stats === null
      ? h('p', { class: 'muted' }, 'Not available from this server.')
      : stats.rows.length === 0
        ? h('p', { class: 'muted' }, 'No streamed gateway attempt since the gateway started.')
        : h(
            'div',
            { class: 'table-scroll' },
            h(
            'table',
            { class: 'data compact', id: 'gw-provider-cache' },
            h('caption', { class: 'sr-only' }, caption),
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                h('th', { scope: 'col' }, 'provider / model'),
                h('th', { scope: 'col', class: 'num' }, 'hits'),
                h('th', { scope: 'col', class: 'num' }, 'hit p50'),
                h('th', { scope: 'col', class: 'num' }, 'hit mean'),
                h('th', { scope: 'col', class: 'num' }, 'misses'),
                h('th', { scope: 'col', class: 'num' }, 'miss p50'),
                h('th', { scope: 'col', class: 'num' }, 'miss mean'),
                h('th', { scope: 'col', class: 'num' }, 'p50 saved'),
              ),
            ),
            h(
              'tbody',
              null,
              stats.rows.map((r) => {
                const saved = r.hit.p50_ms !== null && r.miss.p50_ms !== null ? r.miss.p50_ms - r.hit.p50_ms : null;
                return h(
                  'tr',
                  { 'data-provider': r.provider, 'data-model': r.model },
                  h('th', { scope: 'row' }, `${r.provider} / ${r.model}`),
                  ...sideCells('hit', r.hit),
                  ...sideCells('miss', r.miss),
                  msCell('saved_p50', saved),
                );
              }),
            ),
            ),
          );
  return h(
    'figure',
    { class: 'card', 'data-figure': 'provider_cache' },
    h('figcaption', null, caption, h('span', { class: 'n' }, ' since the gateway started (p50 from histogram buckets)')),
    body,
  );
}

export const gatewayPage: Page<Data> = {
  title: () => 'Gateway',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [gw, values, providerCache] = await Promise.all([
      ctx.get<GatewayStats>('gateway', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
      // Live, not windowed: no parameters. A server without it must not take the page down.
      ctx.get<ProviderCacheStats>('gateway/provider-cache').catch(() => null),
    ]);
    return { gw, values, providerCache };
  },

  render(ctx, { gw, values, providerCache }) {
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
      h('p', { class: 'lede' }, `What the gateway did in the last ${gw.window}: cache hits, fallbacks and hedges, and the time it added to each request; and since it started, what a provider prompt-cache hit took off TTFT.`),
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
      h('div', { class: 'grid-3' }, providerCacheFigure(providerCache)),
    );
  },
};
