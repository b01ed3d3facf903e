// Time of day: a latency heatmap by hour in the viewer's time zone, either hour x weekday for
// one model (the view that shows a provider slowing down in US business hours) or hour x
// model for all of them. An HTML table, so every cell is text a screen reader can reach.

import type { Heatmap, HeatmapCell } from '../api';
import { h } from '../dom';
import { fmtMs, fmtMsUnit, fmtN } from '../format';
import type { Page, PageContext } from '../page';
import { apiParams, withParam } from '../route';
import { colour, kStops } from '../scale';
import { emptyState, exportLinks, filterBar, heading, loadLabelValues, select, type LabelValues } from '../widgets';

const kDefaultWindow = '7d';
const kWeekdays = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const kMetrics = [
  { value: 'ttft', label: 'TTFT' },
  { value: 'tpot', label: 'TPOT' },
  { value: 'e2e', label: 'E2E' },
  { value: 'e2e500', label: 'E2E@500' },
];
const kQs = [
  { value: '0.5', label: 'p50' },
  { value: '0.95', label: 'p95' },
  { value: '0.99', label: 'p99' },
];

interface Data {
  map: Heatmap;
  values: LabelValues;
  tz: string;
  /** The heatmap query, for the export links. */
  params: URLSearchParams;
}

export function viewerTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

function choice(ctx: PageContext, key: string, list: ReadonlyArray<{ value: string }>, fallback: string): string {
  const v = ctx.route.params.get(key);
  return v && list.some((o) => o.value === v) ? v : fallback;
}

function scale(cells: readonly HeatmapCell[]): (v: number) => number {
  const vals = cells.filter((c) => !c.insufficient && c.value !== null && c.value > 0).map((c) => c.value!);
  if (vals.length === 0) return () => 0;
  // Log scale: a slow hour at 3x the median should stand out without flattening the rest.
  const lo = Math.log(Math.min(...vals));
  const hi = Math.log(Math.max(...vals));
  return (v) => (hi > lo ? (Math.log(v) - lo) / (hi - lo) : 0.5);
}

function hourLabel(hr: number): string {
  return `${String(hr).padStart(2, '0')}:00`;
}

function cellTd(cell: HeatmapCell | undefined, rowName: string, hour: number, what: string, t: (v: number) => number): HTMLTableCellElement {
  const where = `${rowName} ${hourLabel(hour)}–${hourLabel((hour + 1) % 24)}`;
  const attrs = { 'data-hour': hour, 'data-row': rowName };
  if (!cell) return h('td', { ...attrs, class: 'hm empty', 'aria-label': `${where}: no data`, title: `${where}: no data` });
  if (cell.insufficient || cell.value === null) {
    const label = `${where}: insufficient data (${fmtN(cell.samples)})`;
    return h(
      'td',
      { ...attrs, class: 'hm insufficient', 'data-samples': cell.samples, 'aria-label': label, title: label },
      fmtN(cell.samples),
    );
  }
  const label = `${where}: ${what} ${fmtMs(cell.value)} ms, ${fmtN(cell.samples)}`;
  const c = colour(t(cell.value));
  return h(
    'td',
    {
      ...attrs,
      class: 'hm',
      'data-value': cell.value,
      'data-samples': cell.samples,
      'aria-label': label,
      title: label,
      style: `background:${c.bg};color:${c.fg}`,
    },
    fmtMs(cell.value),
  );
}

function heatTable(map: Heatmap, what: string): HTMLElement {
  const t = scale(map.cells);
  const rows: Array<{ name: string; key: string; cells: Map<number, HeatmapCell> }> = [];
  if (map.by === 'weekday') {
    kWeekdays.forEach((name, i) => rows.push({ name, key: String(i), cells: new Map() }));
    for (const c of map.cells) {
      if (c.weekday !== undefined) rows[c.weekday]?.cells.set(c.hour, c);
    }
  } else {
    const byModel = new Map<string, (typeof rows)[number]>();
    for (const c of map.cells) {
      const key = JSON.stringify([c.provider ?? '', c.model ?? '']);
      let r = byModel.get(key);
      if (!r) {
        r = { name: `${c.model ?? ''} (${c.provider ?? ''})`, key, cells: new Map() };
        byModel.set(key, r);
      }
      r.cells.set(c.hour, c);
    }
    rows.push(...Array.from(byModel.values()).sort((a, b) => a.name.localeCompare(b.name)));
  }
  const hours = Array.from({ length: 24 }, (_, i) => i);
  const caption = `${what} by hour of day${map.by === 'weekday' ? ' and weekday' : ' and model'}, ${map.tz}, ${map.window} window`;
  return h(
    'div',
    { class: 'table-wrap heatmap-wrap', tabindex: 0, role: 'region', 'aria-label': caption, 'data-key': 'heatmap' },
    h(
      'table',
      { class: 'heatmap', id: 'heatmap', 'data-by': map.by },
      h('caption', null, caption),
      h(
        'thead',
        null,
        h('tr', null, h('th', { scope: 'col' }, map.by === 'weekday' ? 'Day' : 'Model'), hours.map((hr) => h('th', { scope: 'col', 'aria-label': hourLabel(hr) }, String(hr).padStart(2, '0')))),
      ),
      h(
        'tbody',
        null,
        rows.map((r) =>
          h(
            'tr',
            { 'data-row-key': r.key },
            h('th', { scope: 'row' }, map.by === 'weekday' ? r.name.slice(0, 3) : r.name),
            hours.map((hr) => cellTd(r.cells.get(hr), r.name, hr, what, t)),
          ),
        ),
      ),
    ),
  );
}

function legend(map: Heatmap): HTMLElement {
  const vals = map.cells.filter((c) => !c.insufficient && c.value !== null).map((c) => c.value!);
  const stops = kStops.map((s) => `rgb(${s.join(' ')})`).join(', ');
  return h(
    'div',
    { class: 'legend', 'aria-hidden': 'true' },
    h(
      'span',
      { class: 'legend-item' },
      vals.length ? fmtMsUnit(Math.min(...vals)) : null,
      h('span', { class: 'ramp', style: `background:linear-gradient(to right, ${stops})` }),
      vals.length ? fmtMsUnit(Math.max(...vals)) : null,
    ),
    h('span', { class: 'legend-item' }, h('span', { class: 'swatch insufficient' }), 'insufficient data (sample count shown)'),
    h('span', { class: 'legend-item' }, h('span', { class: 'swatch empty' }), 'no data'),
  );
}

export const timeOfDayPage: Page<Data> = {
  title: () => 'Time of day',

  async load(ctx) {
    const p = apiParams(ctx.route, kDefaultWindow);
    const tz = ctx.route.params.get('tz') || viewerTimeZone();
    p.set('metric', choice(ctx, 'metric', kMetrics, 'ttft'));
    p.set('q', choice(ctx, 'q', kQs, '0.5'));
    p.set('tz', tz);
    const provider = ctx.route.params.get('provider');
    const model = ctx.route.params.get('model');
    if (provider && model) {
      p.set('provider', provider);
      p.set('model', model);
      p.set('by', 'weekday');
    } else {
      p.set('by', 'model');
    }
    const [map, values] = await Promise.all([
      ctx.get<Heatmap>('heatmap', p),
      loadLabelValues(ctx, p.get('window') ?? kDefaultWindow),
    ]);
    return { map, values, tz, params: p };
  },

  render(ctx, { map, values, tz, params: apiQuery }) {
    const params = ctx.route.params;
    const provider = params.get('provider') ?? '';
    const model = params.get('model') ?? '';
    const current = provider && model ? JSON.stringify([provider, model]) : '';
    const models = values.models.map((m) => ({ value: JSON.stringify([m.provider, m.model]), label: `${m.model} (${m.provider})` }));
    if (current && !models.some((m) => m.value === current)) models.push({ value: current, label: `${model} (${provider})` });
    const modelSelect = select('model', 'Model', current, [{ value: '', label: 'All models (hour × model)' }, ...models], (v) => {
      let next = withParam(withParam(params, 'provider', ''), 'model', '');
      if (v) {
        const [pv, mv] = JSON.parse(v) as [string, string];
        next = withParam(withParam(next, 'provider', pv), 'model', mv);
      }
      ctx.setParams(next);
    });
    const metric = choice(ctx, 'metric', kMetrics, 'ttft');
    const q = choice(ctx, 'q', kQs, '0.5');
    const what = `${kMetrics.find((m) => m.value === metric)!.label} ${kQs.find((x) => x.value === q)!.label}`;
    return h(
      'section',
      { class: 'page' },
      heading('Time of day'),
      h(
        'p',
        { class: 'lede' },
        'Latency by hour of day in your time zone (',
        h('strong', { 'data-tz': tz }, tz),
        '). Choose a model to split the hours by weekday: a provider that slows down in business hours shows as a band.',
      ),
      filterBar(ctx, values, ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'], kDefaultWindow, [
        modelSelect,
        select('metric', 'Metric', metric, kMetrics, (v) => ctx.setParams(withParam(params, 'metric', v))),
        select('q', 'Quantile', q, kQs, (v) => ctx.setParams(withParam(params, 'q', v))),
      ]),
      exportLinks([{ label: 'heatmap', path: 'heatmap', params: apiQuery }]),
      map.cells.length === 0 ? emptyState('No measurements match these filters in this window.') : [legend(map), heatTable(map, what)],
    );
  },
};
