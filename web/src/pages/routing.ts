// The Gateway page's "Routing" section: GET /api/v1/upstreams, the router's live state. Per
// virtual model, its members with their share of the last minute's attempts (a bar, so
// traffic leaving a slow replica shows as its bar shrinking from one poll to the next) and the
// upstream's estimates the router decides from.

import type { RoutingMember, RoutingModel, UpstreamState, Upstreams } from '../api';
import { h } from '../dom';
import { fmtCount, fmtMs, fmtMsUnit, fmtPct } from '../format';
import { emptyState, numCell } from '../widgets';

const kRouting: Record<string, string> = {
  priority: 'priority (first available)',
  round_robin: 'round robin',
  latency: 'latency (two random choices, the cheaper)',
  affinity: 'prefix affinity',
};

const kBreaker: Record<UpstreamState['breaker'], string> = { closed: 'closed', open: 'open', half_open: 'half open' };

export function hedgeText(hedge: string | number): string {
  if (typeof hedge === 'number') return `after ${fmtMsUnit(hedge)}`;
  if (hedge === 'off') return 'off';
  return /^p\d+$/.test(hedge) ? `after the primary's TTFT ${hedge}` : hedge;
}

function meta(key: string, label: string, value: string, raw: string | number): HTMLElement {
  return h('div', { 'data-meta': key, 'data-value': raw }, h('dt', null, label), h('dd', null, value));
}

function breakerCell(u: UpstreamState): HTMLElement {
  const title = `opened ${fmtCount(u.breaker_opens)} time${u.breaker_opens === 1 ? '' : 's'} since the gateway started`;
  return h('td', { 'data-col': 'breaker', 'data-value': u.breaker, title }, h('span', { class: `breaker breaker-${u.breaker}` }, kBreaker[u.breaker] ?? u.breaker));
}

function memberRow(m: RoutingMember, u: UpstreamState | undefined): HTMLTableRowElement {
  const name = h(
    'th',
    { scope: 'row', 'data-col': 'upstream' },
    `${m.provider} / ${m.model}`,
    m.local ? h('span', { class: 'tag' }, 'local') : null,
    u?.region ? h('span', { class: 'n' }, u.region) : null,
  );
  const share = h('td', { class: 'num', 'data-col': 'share', 'data-value': m.share }, fmtPct(m.share));
  const bar = h('td', { class: 'bar-cell', 'aria-hidden': 'true' }, h('span', { class: 'bar', style: `width:${(Math.min(1, Math.max(0, m.share)) * 100).toFixed(1)}%` }));
  if (!u) {
    return h('tr', { 'data-provider': m.provider, 'data-model': m.model }, name, share, bar, h('td', { colspan: 10, class: 'none' }, 'not in the gateway’s upstream list'));
  }
  const n = u.attempts;
  // Unmeasured estimates are zeros, not measurements; a p95 or TPOT of 0 has no samples yet.
  const ms = (col: string, v: number, zeroIsNone: boolean) => numCell(col, u.measured && !(zeroIsNone && v <= 0) ? v : null, fmtMs, n);
  const count = (col: string, v: number) => h('td', { class: 'num', 'data-col': col, 'data-value': v }, fmtCount(v));
  return h(
    'tr',
    { 'data-provider': m.provider, 'data-model': m.model, 'data-breaker': u.breaker, class: u.breaker === 'closed' ? null : `is-${u.breaker.replace('_', '-')}` },
    name,
    share,
    bar,
    ms('ttft', u.ttft_ms, false),
    ms('ttft_p95', u.ttft_p95_ms, true),
    ms('tpot', u.tpot_ms, true),
    count('in_flight', u.in_flight),
    h('td', { class: 'num', 'data-col': 'error_rate', 'data-value': u.error_rate, title: `${fmtCount(u.failures)} failed of ${fmtCount(n)} attempts since start` }, fmtPct(u.error_rate)),
    breakerCell(u),
    count('hedges_sent', u.hedges.sent),
    count('hedges_won', u.hedges.won),
    count('hedges_lost', u.hedges.lost),
    count('attempts', n),
  );
}

function modelFigure(m: RoutingModel, index: number, byKey: Map<string, UpstreamState>): HTMLElement {
  const col = (label: string, title?: string, num = true) => h('th', { scope: 'col', class: num ? 'num' : null, title: title ?? null }, label);
  return h(
    'figure',
    { class: 'card routing-model', 'data-figure': `routing:${m.name}`, 'data-model': m.name },
    h('figcaption', null, m.name),
    h(
      'dl',
      { class: 'route-meta' },
      meta('routing', 'Routing', kRouting[m.routing] ?? m.routing, m.routing),
      meta('hedge', 'Hedge', hedgeText(m.hedge), m.hedge),
      meta('deadline', 'TTFT deadline', m.ttft_deadline_ms > 0 ? fmtMsUnit(m.ttft_deadline_ms) : 'none', m.ttft_deadline_ms),
    ),
    m.members.length === 0
      ? emptyState('No members.')
      : h(
          'div',
          { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': `Routing: ${m.name}`, 'data-key': `table:routing:${index}` },
          h(
            'table',
            { class: 'data compact routing', id: `routing-${index}`, 'data-model': m.name },
            h('caption', { class: 'sr-only' }, `Members of ${m.name}`),
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                col('upstream', undefined, false),
                col('share', 'of this model’s attempts over the last minute'),
                h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'bar')),
                col('TTFT est. (ms)', 'the peak-EWMA the router compares, per 1,024 prompt tokens'),
                col('TTFT p95 (ms)', 'of the last 128 TTFTs, per 1,024 prompt tokens: the adaptive hedge delay'),
                col('TPOT (ms)', 'time per output token, moving average'),
                col('in flight'),
                col('errors', 'moving average of failures per attempt (connect errors, timeouts, 429, 5xx)'),
                col('breaker', 'open: passed over; half open: one probe request may go', false),
                col('hedges sent', 'hedges this upstream was asked for, since start'),
                col('won', 'hedges that gave the first token'),
                col('lost', 'hedges cancelled because another attempt won'),
                col('attempts', 'attempts started since the gateway started'),
              ),
            ),
            h('tbody', null, m.members.map((mem) => memberRow(mem, byKey.get(`${mem.provider}\u0000${mem.model}`)))),
          ),
        ),
  );
}

/** The section; `state` null means the server does not serve /api/v1/upstreams. */
export function routingSection(state: Upstreams | null): HTMLElement {
  const title = h('h2', { id: 'routing-heading' }, 'Routing');
  const section = (...body: Array<HTMLElement | HTMLElement[] | null>) =>
    h('section', { class: 'routing', 'aria-labelledby': 'routing-heading', 'data-section': 'routing' }, title, ...body);
  if (state === null) return section(h('p', { class: 'muted' }, 'Not available from this server.'));
  const byKey = new Map(state.upstreams.map((u) => [`${u.provider}\u0000${u.model}`, u]));
  return section(
    h('p', { class: 'lede' }, 'Now: where each virtual model sends its requests (share of the last minute’s attempts) and what the router knows of each upstream. Estimates are per 1,024 prompt tokens; counts since the gateway started.'),
    state.models.length === 0
      ? emptyState('No virtual model: add [[models]] entries with upstreams to the gateway’s config.')
      : h('div', { class: 'routing-models' }, state.models.map((m, i) => modelFigure(m, i, byKey))),
    h(
      'p',
      { class: 'note', 'data-key': 'hedges-cancelled', 'data-value': state.hedges_cancelled },
      `Losing attempts of hedged pairs cancelled since the gateway started: ${fmtCount(state.hedges_cancelled)}.`,
    ),
  );
}
