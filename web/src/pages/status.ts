// Status: per provider and model its state now and a strip of hourly segments (the last 24 h or
// 7 d), then the latency incidents. The page a provider would publish, if any did.

import { ApiError, type Incident, type Incidents, type Status, type StatusBucket, type StatusModel, type StatusState } from '../api';
import { h, srOnly } from '../dom';
import { fmtCount, fmtMs, fmtN, fmtPct, fmtSeconds } from '../format';
import type { Page, PageContext } from '../page';
import { href, sharedParams, withParam } from '../route';
import { emptyState, exportLinks, heading } from '../widgets';

type StatusWindow = '24h' | '7d';

/** null: the server has no incident detection (404); an Error: it failed; 'pending': the
 *  first answer has not arrived yet. */
type IncidentsState = Incidents | null | Error | 'pending';

interface Data {
  status: Status;
  incidents: IncidentsState;
}

/** The shared window when it is one the status endpoint takes, else 24 h. */
function statusWindow(ctx: PageContext): StatusWindow {
  return ctx.route.params.get('window') === '7d' ? '7d' : '24h';
}

// Words and a shape for each state, so the colour is never the only cue.
const kStates: Record<StatusState, { word: string; mark: string; hours: (n: number) => string }> = {
  green: { word: 'Normal', mark: '●', hours: (n) => `${n} green ${n === 1 ? 'hour' : 'hours'}` },
  amber: { word: 'Degraded', mark: '▲', hours: (n) => `${n} amber ${n === 1 ? 'hour' : 'hours'}` },
  red: { word: 'Disrupted', mark: '■', hours: (n) => `${n} red ${n === 1 ? 'hour' : 'hours'}` },
  none: { word: 'No data', mark: '○', hours: (n) => `${n} ${n === 1 ? 'hour' : 'hours'} without enough data` },
};

function stateBadge(state: StatusState): HTMLElement {
  const s = kStates[state] ?? kStates.none;
  return h('span', { class: `state state-${state}`, 'data-state': state }, h('span', { 'aria-hidden': 'true' }, s.mark), ` ${s.word}`);
}

// Local times written by hand rather than by Intl.DateTimeFormat: creating one costs tens of
// milliseconds in a fresh page, a fifth of the status page's first-load budget. 24-hour clock,
// the page's English names.
const kDays = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const kMonths = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const hhmm = (d: Date) => `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;

// The same hours recur in every row and every poll: format each once (Intl is the slow part
// of the first render).
const hourRanges = new Map<string, string>();
function hourRange(t: string): string {
  let s = hourRanges.get(t);
  if (s === undefined) {
    const from = new Date(Date.parse(t));
    s = `${kDays[from.getDay()]} ${hhmm(from)}–${hhmm(new Date(from.getTime() + 3_600_000))}`;
    if (hourRanges.size > 2000) hourRanges.clear();
    hourRanges.set(t, s);
  }
  return s;
}

function bucketText(b: StatusBucket): string {
  const parts = [`${hourRange(b.t)}: ${b.state === 'none' ? 'no state (too few samples)' : b.state}`];
  if (b.ttft_p50_ms !== null) {
    parts.push(
      b.ratio !== null && b.baseline_ttft_p50_ms !== null
        ? `TTFT p50 ${fmtMs(b.ttft_p50_ms)} ms, ${b.ratio.toFixed(1)}x the baseline ${fmtMs(b.baseline_ttft_p50_ms)} ms`
        : `TTFT p50 ${fmtMs(b.ttft_p50_ms)} ms`,
    );
  }
  parts.push(`${fmtN(b.samples)}, ${fmtCount(b.errors)} ${b.errors === 1 ? 'error' : 'errors'}`);
  if (b.incidents.length) parts.push(`incident ${b.incidents.map((i) => `#${i}`).join(', ')}`);
  return parts.join('; ');
}

/** "2 amber hours, 1 red hour in the last 24 h" (green and empty hours only when nothing else). */
export function stripSummary(buckets: readonly StatusBucket[], window: StatusWindow): string {
  const count = (s: StatusState) => buckets.filter((b) => b.state === s).length;
  const span = window === '7d' ? 'the last 7 days' : 'the last 24 h';
  const bad = (['red', 'amber'] as const).filter((s) => count(s) > 0).map((s) => kStates[s].hours(count(s)));
  const none = count('none');
  const green = count('green');
  const rest = [green ? kStates.green.hours(green) : '', none ? kStates.none.hours(none) : ''].filter(Boolean);
  return `${[...bad, ...rest].join(', ') || 'no hours'} in ${span}`;
}

function strip(m: StatusModel, window: StatusWindow): HTMLElement {
  const summary = stripSummary(m.buckets, window);
  // Each segment's tooltip is written when the pointer first reaches it: a week of segments is
  // 840 numbers to format, and the first Intl.NumberFormat of a fresh page costs 60-250 ms
  // here, more than the status page's whole first-load budget leaves for it. The strip's
  // summary and the hourly table carry the same numbers for keyboard and screen readers.
  const onOver = (e: Event) => {
    const seg = e.target as HTMLElement;
    const b = m.buckets[Number(seg.dataset.i)];
    if (seg.classList.contains('seg') && b && !seg.hasAttribute('title')) seg.setAttribute('title', bucketText(b));
  };
  return h(
    'div',
    { class: 'strip-wrap' },
    h(
      'div',
      { class: `strip strip-${window}`, role: 'img', 'aria-label': `${m.model}: ${summary}`, 'data-strip': window, 'data-buckets': m.buckets.length, onmouseover: onOver },
      m.buckets.map((b, i) =>
        h('span', {
          class: `seg seg-${b.state}`,
          'data-i': i,
          'data-t': b.t,
          'data-state': b.state,
          'data-samples': b.samples,
        }),
      ),
    ),
    h('div', { class: 'strip-axis', 'aria-hidden': 'true' }, h('span', null, window === '7d' ? '7 d ago' : '24 h ago'), h('span', null, 'now')),
    h('p', { class: 'strip-summary', 'data-summary': '' }, summary),
  );
}

/** The hourly numbers behind a strip, built when the viewer opens them (the first render
 *  stays small: a week is 168 rows per model). */
function hourTable(m: StatusModel): HTMLElement {
  const details = h(
    'details',
    { class: 'chart-data' },
    h('summary', { 'data-key': `data:status:${m.provider}\u0000${m.model}` }, 'Hourly data', srOnly(` for ${m.model} (${m.provider})`)),
  );
  let built = false;
  details.addEventListener('toggle', () => {
    if (!details.open || built) return;
    built = true;
    details.appendChild(hourTableBody(m));
  });
  return details;
}

function hourTableBody(m: StatusModel): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data compact' },
      h('caption', { class: 'sr-only' }, `${m.model} (${m.provider}) per hour`),
      h('thead', null, h('tr', null, ['hour', 'state', 'n', 'errors', 'TTFT p50 (ms)', 'baseline (ms)', 'ratio', 'incidents'].map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        null,
        m.buckets.map((b) =>
          h(
            'tr',
            null,
            h('td', null, hourRange(b.t)),
            h('td', null, b.state === 'none' ? 'no data' : b.state),
            h('td', { class: 'num' }, fmtCount(b.samples)),
            h('td', { class: 'num' }, fmtCount(b.errors)),
            h('td', { class: 'num' }, b.ttft_p50_ms === null ? '–' : fmtMs(b.ttft_p50_ms)),
            h('td', { class: 'num' }, b.baseline_ttft_p50_ms === null ? '–' : fmtMs(b.baseline_ttft_p50_ms)),
            h('td', { class: 'num' }, b.ratio === null ? '–' : `${b.ratio.toFixed(2)}x`),
            h('td', null, b.incidents.map((i) => `#${i}`).join(', ')),
          ),
        ),
      ),
    ),
  );
}

function statusTable(ctx: PageContext, status: Status, window: StatusWindow): HTMLElement {
  const params = sharedParams(ctx.route.params);
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Status per model', 'data-key': 'table:status' },
    h(
      'table',
      { id: 'status', class: 'data status' },
      h('caption', null, `State now and per hour, last ${window === '7d' ? '7 days' : '24 hours'}`),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Model, state now'), h('th', { scope: 'col' }, window === '7d' ? 'Last 7 days, hourly' : 'Last 24 h, hourly'))),
      h(
        'tbody',
        null,
        status.models.map((m) =>
          h(
            'tr',
            { 'data-provider': m.provider, 'data-model': m.model, 'data-state': m.state },
            h(
              'th',
              { scope: 'row' },
              h('a', { href: href('model', [m.provider, m.model], params), 'data-key': `model:${m.provider}\u0000${m.model}` }, m.model),
              h('span', { class: 'provider-name' }, m.provider),
              h(
                'div',
                { 'data-col': 'state' },
                stateBadge(m.state),
                m.open_incident !== null ? h('a', { class: 'incident-link', href: `#incident-${m.open_incident}`, onclick: jumpTo(`incident-${m.open_incident}`) }, ` incident #${m.open_incident}`) : null,
              ),
            ),
            h('td', { 'data-col': 'strip' }, strip(m, window), hourTable(m)),
          ),
        ),
      ),
    ),
  );
}

// In-page links must not change the hash (it is the route): scroll and focus instead.
function jumpTo(id: string): (e: Event) => void {
  return (e) => {
    e.preventDefault();
    const el = document.getElementById(id);
    el?.scrollIntoView({ block: 'center' });
    el?.focus();
  };
}

const kMetricNames: Record<string, string> = {
  ttft_p50_ms: 'TTFT p50',
  ttft_p95_ms: 'TTFT p95',
  tpot_p50_ms: 'TPOT p50',
  tpot_p95_ms: 'TPOT p95',
  error_rate: 'error rate',
};

/** "TTFT p95 3.1x baseline", with the error rate when errors were part of it. */
export function incidentSize(x: Incident): string {
  const parts: string[] = [];
  if (x.size.metric !== null && x.size.ratio !== null) parts.push(`${kMetricNames[x.size.metric] ?? x.size.metric} ${x.size.ratio.toFixed(1)}x baseline`);
  if (x.size.error_rate !== null && (x.size.metric === null || x.size.error_rate > 0)) parts.push(`errors ${fmtPct(x.size.error_rate)}`);
  return parts.join(', ') || '–';
}

function dateText(iso: string): string {
  const d = new Date(Date.parse(iso));
  return `${kMonths[d.getMonth()]} ${d.getDate()}, ${hhmm(d)}`;
}

function incidentsSection(data: IncidentsState, enabled: boolean): HTMLElement {
  const section = (...body: Array<Node | string>) =>
    h('section', { class: 'incidents', 'aria-labelledby': 'incidents-h' }, h('h2', { id: 'incidents-h' }, 'Incidents'), ...body);
  if (data === 'pending') return section(h('p', { class: 'muted', 'data-incidents': 'loading' }, 'Loading incidents…'));
  if (data === null || !enabled) {
    return section(h('p', { class: 'muted', 'data-incidents': 'disabled' }, 'Incident detection is not enabled on this server, so there is no incident list. The hourly states above are still measured.'));
  }
  if (data instanceof Error) return section(h('p', { class: 'error', role: 'alert' }, `Could not load incidents: ${data.message}`));
  if (data.incidents.length === 0) return section(emptyState('No incidents.'));
  const rows = data.incidents.map((x) => {
    const regions = [...new Set(x.cells.map((c) => c.upstream_region || '(unknown)'))];
    return h(
      'tr',
      { id: `incident-${x.id}`, tabindex: -1, 'data-id': x.id, 'data-state': x.state, class: x.state === 'open' ? 'open' : null },
      h('td', { class: 'num' }, `#${x.id}`),
      h('td', null, x.model, ' ', h('span', { class: 'provider-name' }, x.provider)),
      h('td', { 'data-col': 'state' }, x.state === 'open' ? h('strong', null, 'Open') : 'Closed'),
      h('td', { 'data-col': 'start' }, h('time', { datetime: x.start }, dateText(x.start))),
      h('td', { 'data-col': 'end' }, x.end === null ? h('strong', null, 'ongoing') : h('time', { datetime: x.end }, dateText(x.end))),
      h('td', { class: 'num', 'data-col': 'duration', 'data-value': x.duration_s }, fmtSeconds(x.duration_s)),
      h('td', { 'data-col': 'size' }, incidentSize(x)),
      h('td', { 'data-col': 'regions' }, regions.join(', ')),
    );
  });
  return section(
    h('p', { class: 'muted' }, `${fmtCount(data.open)} open. Open incidents first, then closed ones, newest first.`),
    h(
      'div',
      { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Incidents', 'data-key': 'table:incidents' },
      h(
        'table',
        { id: 'incidents', class: 'data' },
        h('caption', { class: 'sr-only' }, 'Latency incidents'),
        h('thead', null, h('tr', null, ['#', 'Model', 'State', 'Start', 'End', 'Duration', 'Size', 'Regions'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, rows),
      ),
    ),
  );
}

function legend(): HTMLElement {
  return h(
    'ul',
    { class: 'status-legend', 'aria-label': 'Legend' },
    (['green', 'amber', 'red', 'none'] as const).map((s) =>
      h('li', null, h('span', { class: `seg seg-${s}`, 'aria-hidden': 'true' }), stateBadge(s), h('span', { class: 'muted' }, {
        green: ' within 1.5x the baseline TTFT, few errors',
        amber: ' slower than usual or more errors',
        red: ' much slower or failing',
        none: ' too few samples to judge',
      }[s])),
    ),
  );
}

let incidentsSeen: IncidentsState = 'pending';
let deferredIncidents: Promise<IncidentsState> | null = null;

export const statusPage: Page<Data> = {
  title: () => 'Status',

  async load(ctx) {
    const window = statusWindow(ctx);
    // The render right after a deferred fetch landed takes that answer, not a second request.
    const fetching =
      deferredIncidents ??
      ctx
        .get<Incidents>('incidents')
        .catch((err: unknown): IncidentsState => (err instanceof ApiError && err.status === 404 ? null : err instanceof Error ? err : new Error(String(err))))
        .then((x) => (incidentsSeen = x));
    deferredIncidents = null;
    // The first time, the strips do not wait for the incidents (like the filter values): the
    // page renders again when they land.
    if (incidentsSeen === 'pending') {
      deferredIncidents = fetching;
      ctx.defer(fetching);
      return { status: await ctx.get<Status>('status', new URLSearchParams({ window })), incidents: 'pending' };
    }
    const [status, incidents] = await Promise.all([ctx.get<Status>('status', new URLSearchParams({ window })), fetching]);
    return { status, incidents };
  },

  render(ctx, { status, incidents }) {
    const window = statusWindow(ctx);
    const toggle = h(
      'div',
      { class: 'segmented', role: 'group', 'aria-label': 'Period' },
      (['24h', '7d'] as const).map((w) =>
        h(
          'button',
          {
            type: 'button',
            'aria-pressed': w === window ? 'true' : 'false',
            'data-key': `window:${w}`,
            'data-window': w,
            onclick: () => ctx.setParams(withParam(ctx.route.params, 'window', w)),
          },
          w === '24h' ? 'Last 24 h' : 'Last 7 days',
        ),
      ),
    );
    const exports = [{ label: `status ${window}`, path: 'status', params: new URLSearchParams({ window }) }];
    if (incidents !== null && incidents !== 'pending' && !(incidents instanceof Error)) exports.push({ label: 'incidents', path: 'incidents', params: new URLSearchParams() });
    return h(
      'section',
      { class: 'page' },
      heading('Status'),
      h('p', { class: 'lede' }, 'Each hour of each model, judged against its own usual time to first token: measured here, not reported by the provider.'),
      toggle,
      exportLinks(exports),
      legend(),
      status.models.length === 0 ? emptyState('No models measured in this window.') : statusTable(ctx, status, window),
      status.truncated ? h('p', { class: 'muted' }, 'More models than one answer holds: the list is cut short.') : null,
      incidentsSection(incidents, status.incidents_enabled),
    );
  },
};
