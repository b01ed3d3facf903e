// Gateway: what `tokenradar serve` did for its clients: cache hits, fallbacks and hedges,
// statuses, the latency the gateway itself added, where it routes now (routing.ts), its
// response cache per model, and TTFT with and without a provider prompt-cache hit.

import { getUpstreams, type CacheModelStats, type GatewayKeyRow, type CacheStats, type GatewayStats, type ProviderCacheSide, type ProviderCacheStats, type Upstreams } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMsUnit, fmtN, fmtPct, fmtRate, fmtSeconds } from '../format';
import type { Page } from '../page';
import { apiParams } from '../route';
import { routingSection } from './routing';
import { emptyState, exportLinks, filterBar, heading, insufficientText, loadLabelValues, statTile, type LabelValues } from '../widgets';

const kDefaultWindow = '24h';

interface Data {
  gw: GatewayStats;
  values: LabelValues;
  /** null when the server has no cache endpoint (an observatory without a gateway). */
  cache: CacheStats | null;
  /** null when the server does not answer it (an observatory without a gateway). */
  providerCache: ProviderCacheStats | null;
  /** null when the server does not serve /api/v1/upstreams (no gateway). */
  upstreams: Upstreams | null;
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

/** Hits over lookups: a bypassed request (sampling, no-store) or a refresh never looked. */
export function cacheHitRate(r: CacheModelStats['requests']): number | null {
  const lookups = r.miss + r.exact + r.semantic;
  return lookups > 0 ? (r.exact + r.semantic) / lookups : null;
}

function fmtBytes(n: number): string {
  if (n < 1024 * 1024) return `${fmtCount(Math.round(n / 1024))} KiB`;
  const mib = n / (1024 * 1024);
  return mib < 10 ? `${fmtRate(mib)} MiB` : `${fmtCount(Math.round(mib))} MiB`;
}

/** The semantic lookups' best similarity: one row per bucket, in order, bars to the largest. */
function similarityHistogram(m: CacheModelStats): HTMLElement {
  const { bounds, counts } = m.similarity;
  const max = Math.max(1, ...counts);
  const label = (i: number) =>
    i === 0 ? `< ${bounds[0]?.toFixed(2)}` : i === bounds.length ? `≥ ${bounds[i - 1]?.toFixed(2)}` : `${bounds[i - 1]?.toFixed(2)}–${bounds[i]?.toFixed(2)}`;
  const title = `Similarity of semantic lookups: ${m.model}`;
  return h(
    'figure',
    { class: 'card', 'data-figure': `similarity:${m.model}` },
    h('figcaption', null, title, h('span', { class: 'n' }, ` ${fmtN(counts.reduce((a, b) => a + b, 0))}`)),
    h(
      'table',
      { class: 'data compact breakdown similarity' },
      h('caption', { class: 'sr-only' }, title),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'cosine'), h('th', { scope: 'col', class: 'num' }, 'lookups'), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'bar')))),
      h(
        'tbody',
        null,
        counts.map((n, i) =>
          h(
            'tr',
            { 'data-bucket': i },
            h('th', { scope: 'row' }, label(i)),
            h('td', { class: 'num', 'data-value': n }, fmtCount(n)),
            h('td', { class: 'bar-cell', 'aria-hidden': 'true' }, h('span', { class: 'bar', style: `width:${((n / max) * 100).toFixed(1)}%` })),
          ),
        ),
      ),
    ),
  );
}

/** One line on the shared tier (L2): which, whether it answers, what it found. */
function sharedTierNote(shared: NonNullable<CacheStats['shared']>): HTMLElement {
  const which = shared.kind === 'redis' ? 'Redis' : 'local file';
  const state = shared.up ? 'up' : 'down: serving from memory alone';
  return h(
    'p',
    { class: 'note', 'data-key': 'cache-shared', 'data-kind': shared.kind, 'data-hits': shared.hits },
    `Shared tier (${which}): ${state}; ${fmtCount(shared.hits)} answers found there and not in memory, ${fmtCount(shared.errors)} errors.`,
  );
}

/** The response cache since the gateway started: hit rate and time saved per model. */
function cacheSection(cache: CacheStats | null): HTMLElement | null {
  if (cache === null) return null;
  const body =
    cache.models.length === 0
      ? emptyState('No model caches its answers: set cache = "exact" (or "semantic") on a [[models]] entry.')
      : [
          h(
            'div',
            { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Response cache per model', 'data-key': 'table:cache-models' },
            h(
              'table',
              { id: 'cache-models', class: 'data' },
              h('caption', null, 'Response cache per model'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  h('th', { scope: 'col' }, 'model'),
                  h('th', { scope: 'col' }, 'mode'),
                  h('th', { scope: 'col', class: 'num', title: 'exact + semantic hits over lookups (hits and misses)' }, 'hit rate'),
                  h('th', { scope: 'col', class: 'num' }, 'exact'),
                  h('th', { scope: 'col', class: 'num' }, 'semantic'),
                  h('th', { scope: 'col', class: 'num' }, 'miss'),
                  h('th', { scope: 'col', class: 'num', title: 'not cacheable (sampling, n > 1, no-store) or refreshed (no-cache)' }, 'bypass'),
                  h('th', { scope: 'col', class: 'num', title: 'the original answers’ end-to-end time less the hits’' }, 'time saved'),
                ),
              ),
              h(
                'tbody',
                null,
                cache.models.map((m) => {
                  const rate = cacheHitRate(m.requests);
                  const r = m.requests;
                  const count = (col: string, n: number) => h('td', { class: 'num', 'data-col': col, 'data-value': n }, fmtCount(n));
                  return h(
                    'tr',
                    { 'data-model': m.model },
                    h('th', { scope: 'row' }, m.model),
                    h('td', { 'data-col': 'mode' }, m.mode),
                    rate === null
                      ? h('td', { class: 'num none', 'data-col': 'hit_rate' }, '–')
                      : h('td', { class: 'num', 'data-col': 'hit_rate', 'data-value': rate, title: `${fmtCount(r.exact + r.semantic)} of ${fmtCount(r.miss + r.exact + r.semantic)}` }, fmtPct(rate)),
                    count('exact', r.exact),
                    count('semantic', r.semantic),
                    count('miss', r.miss),
                    count('bypass', r.bypass + r.refresh),
                    h('td', { class: 'num', 'data-col': 'saved', 'data-value': m.saved_seconds }, fmtSeconds(m.saved_seconds)),
                  );
                }),
              ),
            ),
          ),
          cache.memory
            ? h(
                'p',
                { class: 'note', 'data-key': 'cache-memory' },
                `Memory: ${fmtBytes(cache.memory.bytes)} of ${fmtBytes(cache.memory.max_bytes)}, ${fmtCount(cache.memory.entries)} answers, ${fmtCount(cache.memory.evictions)} evicted.`,
              )
            : null,
          cache.shared ? sharedTierNote(cache.shared) : null,
          cache.models.some((m) => m.mode === 'semantic')
            ? h('div', { class: 'grid-3' }, cache.models.filter((m) => m.mode === 'semantic').map(similarityHistogram))
            : null,
        ];
  return h('section', { class: 'cache', 'aria-labelledby': 'cache-heading', 'data-section': 'cache' }, h('h2', { id: 'cache-heading' }, 'Response cache'), h('p', { class: 'lede' }, 'Since the gateway started: answers served from memory, and the upstream time they saved.'), body);
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

/** A compact data table in a scrolling box: the first column names the row, the others are
 *  numbers. */
function compactTable(id: string, caption: string, columns: readonly string[], rows: readonly HTMLElement[]): HTMLElement {
  return h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { class: 'data compact', id },
      h('caption', { class: 'sr-only' }, caption),
      h('thead', null, h('tr', null, columns.map((c, i) => h('th', i === 0 ? { scope: 'col' } : { scope: 'col', class: 'num' }, c)))),
      h('tbody', null, rows),
    ),
  );
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
        : compactTable(
            'gw-provider-cache',
            caption,
            ['provider / model', 'hits', 'hit p50', 'hit mean', 'misses', 'miss p50', 'miss mean', 'p50 saved'],
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
          );
  return h(
    'figure',
    { class: 'card', 'data-figure': 'provider_cache' },
    h('figcaption', null, caption, h('span', { class: 'n' }, ' since the gateway started (p50 from histogram buckets)')),
    body,
  );
}

/** Latency and usage per client key (virtual keys and [[auth.keys]] by name) over the
 *  window, from the gateway's records; shown when any request came with a key. */
function keysFigure(rows: readonly GatewayKeyRow[], truncated: boolean): HTMLElement | null {
  if (!rows.some((r) => r.client_key !== '')) return null;
  const caption = 'Per client key';
  const quantile = (v: number | null, insufficient: boolean) => (insufficient ? null : v);
  return h(
    'figure',
    { class: 'card', 'data-figure': 'keys' },
    h('figcaption', null, caption, h('span', { class: 'n' }, truncated ? ' (the keys with the most requests)' : ' in this window')),
    compactTable(
      'gw-keys',
      caption,
      ['key', 'requests', 'errors', 'tokens in', 'tokens out', 'TTFT p50', 'TTFT p95', 'E2E p50', 'E2E p95'],
      rows.map((r) =>
        h(
          'tr',
          { 'data-client-key': r.client_key },
          h('th', { scope: 'row' }, r.client_key === '' ? h('span', { class: 'muted' }, 'no key') : r.client_key),
          h('td', { class: 'num', 'data-col': 'requests', 'data-value': r.requests }, fmtCount(r.requests)),
          h('td', { class: 'num', 'data-col': 'errors', 'data-value': r.errors }, fmtCount(r.errors)),
          h('td', { class: 'num', 'data-col': 'prompt_tokens', 'data-value': r.prompt_tokens }, fmtCount(r.prompt_tokens)),
          h('td', { class: 'num', 'data-col': 'output_tokens', 'data-value': r.output_tokens }, fmtCount(r.output_tokens)),
          msCell('ttft_p50', quantile(r.ttft_ms.p50, r.ttft_ms.insufficient)),
          msCell('ttft_p95', quantile(r.ttft_ms.p95, r.ttft_ms.insufficient)),
          msCell('e2e_p50', quantile(r.e2e_ms.p50, r.e2e_ms.insufficient)),
          msCell('e2e_p95', quantile(r.e2e_ms.p95, r.e2e_ms.insufficient)),
        ),
      ),
    ),
  );
}

export const gatewayPage: Page<Data> = {
  title: () => 'Gateway',

  async load(ctx) {
    const params = apiParams(ctx.route, kDefaultWindow);
    const [gw, values, cache, providerCache, upstreams] = await Promise.all([
      ctx.get<GatewayStats>('gateway', params),
      loadLabelValues(ctx, params.get('window') ?? kDefaultWindow),
      // The gateway's own live counters, not the window's records (no parameters); an
      // observatory-only server has none, and the rest of the page stands without them.
      ctx.get<CacheStats>('gateway/cache').catch(() => null),
      ctx.get<ProviderCacheStats>('gateway/provider-cache').catch(() => null),
      // The router's live state; a server without a gateway has none.
      getUpstreams(ctx).catch(() => null),
    ]);
    return { gw, values, cache, providerCache, upstreams };
  },

  render(ctx, { gw, values, cache, providerCache, upstreams }) {
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
      filterBar(ctx, values, ['window', 'client_key'], kDefaultWindow),
      exportLinks([
        { label: 'gateway', path: 'gateway', params: apiParams(ctx.route, kDefaultWindow) },
        ...(upstreams ? [{ label: 'routing', path: 'upstreams' }] : []),
        ...(providerCache ? [{ label: 'prompt cache', path: 'gateway/provider-cache' }] : []),
        ...(cache ? [{ label: 'response cache', path: 'gateway/cache' }] : []),
      ]),
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
            keysFigure(gw.keys ?? [], gw.keys_truncated === true),
          ],
      routingSection(upstreams),
      h('div', { class: 'grid-3' }, providerCacheFigure(providerCache)),
      cacheSection(cache),
    );
  },
};
