// Building blocks shared by the pages: number cells that carry their sample count, the
// "insufficient data" cell, sortable tables, selects and the filter bar.

import { apiUrl, type Leaderboard } from './api';
import { h, replaceChildren, type Children } from './dom';
import { fmtCount, fmtN } from './format';
import type { PageContext } from './page';
import { kWindows, withParam, type SharedFilter } from './route';

/** A number cell: the formatted value, the raw value in data-value and the sample count in
 *  the title (and for screen readers). null means "no value" and shows a dash, never 0. */
export function numCell(
  col: string,
  value: number | null | undefined,
  format: (v: number) => string,
  samples: number,
): HTMLTableCellElement {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return h('td', { class: 'num none', 'data-col': col, title: `no value (${fmtN(samples)})` }, '–');
  }
  return h(
    'td',
    { class: 'num', 'data-col': col, 'data-value': value, title: fmtN(samples) },
    format(value),
  );
}

export function insufficientText(samples: number, minSamples: number | undefined): string {
  return minSamples
    ? `insufficient data (${fmtN(samples)}, needs ${fmtCount(minSamples)})`
    : `insufficient data (${fmtN(samples)})`;
}

export function insufficientCell(colspan: number, samples: number, minSamples?: number): HTMLTableCellElement {
  return h(
    'td',
    { class: 'insufficient', colspan, 'data-col': 'insufficient' },
    insufficientText(samples, minSamples),
  );
}

/** A headline figure: label, value and (usually) the sample count beneath it. */
export function statTile(key: string, label: string, shown: string, raw: number | null | undefined, note?: string): HTMLElement {
  return h(
    'div',
    { class: 'stat', 'data-stat': key, 'data-value': raw ?? null, title: note ?? null },
    h('dt', null, label),
    h('dd', null, shown, note ? h('span', { class: 'n' }, note) : null),
  );
}

/** A sortable numeric column whose cells show `format(value(row))` with the row's n. */
export interface NumColumn<R> extends Column<R> {
  value: (row: R) => number | null | undefined;
  format: (v: number) => string;
}

export function numColumn<R>(
  key: string,
  header: string,
  value: (row: R) => number | null | undefined,
  format: (v: number) => string,
  title?: string,
): NumColumn<R> {
  return { key, header, numeric: true, value, format, sort: (r) => value(r) ?? null, ...(title ? { title } : {}) };
}

/** Appends a row's number cells, or one "insufficient data" cell spanning them, then the
 *  samples cell. */
export function appendNumbers<R>(
  tr: HTMLTableRowElement,
  columns: ReadonlyArray<NumColumn<R>>,
  row: R,
  samples: number,
  insufficient: boolean,
  minSamples?: number,
): HTMLTableRowElement {
  if (insufficient) tr.appendChild(insufficientCell(columns.length, samples, minSamples));
  else for (const c of columns) tr.appendChild(numCell(c.key, c.value(row), c.format, samples));
  tr.appendChild(h('td', { class: 'num', 'data-col': 'samples', 'data-value': samples }, fmtCount(samples)));
  return tr;
}

/** The page heading: focused after navigation (tabindex -1), and found again by its key when a
 *  poll re-renders the page while it has focus. */
export function heading(...children: Children[]): HTMLHeadingElement {
  return h('h1', { tabindex: -1, 'data-key': 'heading' }, ...children);
}

export function errorBox(err: unknown): HTMLElement {
  const message = err instanceof Error ? err.message : String(err);
  return h('div', { class: 'error', role: 'alert' }, h('strong', null, 'Could not load data: '), message);
}

export function emptyState(text: string): HTMLElement {
  return h('p', { class: 'empty' }, text);
}

// ---------------------------------------------------------------------------- tables

export interface Column<R> {
  key: string;
  header: string;
  /** Longer explanation, shown as the header's tooltip. */
  title?: string;
  numeric?: boolean;
  /** Extra classes for the header cell: `wide-only` hides it on phones, `sticky` keeps it in
   *  view while the table scrolls sideways. */
  className?: string;
  /** Sort key; null sorts last. Columns without one are not sortable. */
  sort?: (row: R) => number | string | null;
}

export interface TableSpec<R> {
  id: string;
  caption: string;
  columns: ReadonlyArray<Column<R>>;
  rows: readonly R[];
  /** Rows that are insufficient stay at the bottom whatever the sort. */
  insufficient: (row: R) => boolean;
  renderRow: (row: R) => HTMLTableRowElement;
}

interface SortState {
  key: string;
  dir: 1 | -1;
}

// Per table id, for the session: a poll re-renders the page but keeps the viewer's sort.
const sortStates = new Map<string, SortState>();

function compare(a: number | string | null, b: number | string | null): number {
  if (a === null && b === null) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

function sortedRows<R>(spec: TableSpec<R>): R[] {
  const state = sortStates.get(spec.id);
  const col = state && spec.columns.find((c) => c.key === state.key);
  const rows = spec.rows.map((row, index) => ({ row, index }));
  rows.sort((a, b) => {
    const ia = spec.insufficient(a.row) ? 1 : 0;
    const ib = spec.insufficient(b.row) ? 1 : 0;
    if (ia !== ib) return ia - ib;
    if (col?.sort && state) {
      const va = col.sort(a.row);
      const vb = col.sort(b.row);
      // Missing values stay last in both directions.
      if (va === null || vb === null) return compare(va, vb) || a.index - b.index;
      const c = compare(va, vb) * state.dir;
      if (c !== 0) return c;
    }
    return a.index - b.index; // the server's order
  });
  return rows.map((r) => r.row);
}

/** A table whose headers sort it (buttons, so the keyboard can too). */
export function dataTable<R>(spec: TableSpec<R>): HTMLElement {
  const tbody = h('tbody');
  const headRow = h('tr');
  const fill = () => {
    replaceChildren(tbody, sortedRows(spec).map((r) => spec.renderRow(r)));
    const state = sortStates.get(spec.id);
    for (const th of Array.from(headRow.children)) {
      const key = (th as HTMLElement).dataset.col;
      if (state && key === state.key) th.setAttribute('aria-sort', state.dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
  };
  for (const col of spec.columns) {
    const content = col.sort
      ? h(
          'button',
          {
            type: 'button',
            class: 'sort',
            'data-key': `sort:${spec.id}:${col.key}`,
            onclick: () => {
              const prev = sortStates.get(spec.id);
              const dir = prev?.key === col.key ? (prev.dir === 1 ? -1 : 1) : 1;
              sortStates.set(spec.id, { key: col.key, dir });
              fill();
            },
          },
          col.header,
        )
      : col.header;
    headRow.appendChild(
      h(
        'th',
        { scope: 'col', class: [col.numeric ? 'num' : '', col.className ?? ''].join(' ').trim() || null, title: col.title, 'data-col': col.key },
        content,
      ),
    );
  }
  fill();
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': spec.caption, 'data-key': `table:${spec.id}` },
    h('table', { id: spec.id, class: 'data' }, h('caption', null, spec.caption), h('thead', null, headRow), tbody),
  );
}

// ---------------------------------------------------------------------------- forms

export interface Option {
  value: string;
  label: string;
}

export function select(
  key: string,
  label: string,
  value: string,
  options: readonly Option[],
  onChange: (value: string) => void,
): HTMLElement {
  const id = `f-${key}`;
  const sel = h(
    'select',
    { id, name: key, 'data-key': `filter:${key}`, onchange: (e: Event) => onChange((e.target as HTMLSelectElement).value) },
    options.map((o) => h('option', { value: o.value, selected: o.value === value }, o.label)),
  );
  return h('div', { class: 'field' }, h('label', { for: id }, label), sel);
}

/** Values seen for each label in the window, for the filter selects. `loaded` is false while
 *  the first query for a window is still running. */
export interface LabelValues {
  loaded: boolean;
  client_region: string[];
  upstream_region: string[];
  task: string[];
  source: string[];
  /** The gateway's client keys (virtual keys, [[auth.keys]]): none on a public observatory. */
  client_key: string[];
  models: Array<{ provider: string; model: string }>;
}

const kLabelKeys = ['client_region', 'upstream_region', 'task', 'source', 'client_key'] as const;
const kNoValues: LabelValues = {
  loaded: false,
  client_region: [],
  upstream_region: [],
  task: [],
  source: [],
  client_key: [],
  models: [],
};
// Per window: the last values seen, so a poll or a page change does not wait for them again.
const valuesSeen = new Map<string, LabelValues>();

function toValues(lb: Leaderboard): LabelValues {
  const sets = new Map<string, Set<string>>(kLabelKeys.map((k) => [k, new Set<string>()]));
  const models = new Map<string, { provider: string; model: string }>();
  for (const row of lb.rows) {
    for (const k of kLabelKeys) {
      const v = row[k];
      if (typeof v === 'string' && v !== '') sets.get(k)!.add(v);
    }
    models.set(JSON.stringify([row.provider, row.model]), { provider: row.provider, model: row.model });
  }
  const sorted = (k: string) => Array.from(sets.get(k) ?? []).sort((a, b) => a.localeCompare(b));
  return {
    loaded: true,
    client_region: sorted('client_region'),
    upstream_region: sorted('upstream_region'),
    task: sorted('task'),
    source: sorted('source'),
    client_key: sorted('client_key'),
    models: Array.from(models.values()).sort(
      (a, b) => a.provider.localeCompare(b.provider) || a.model.localeCompare(b.model),
    ),
  };
}

/** One leaderboard query split by every filterable label gives the values that exist. It
 *  deliberately ignores the other filters, so choosing a task does not hide the others. The
 *  first time for a window it does not hold up the page: the selects fill in when it lands. */
export async function loadLabelValues(ctx: PageContext, window: string): Promise<LabelValues> {
  const params = new URLSearchParams({ window, by: 'provider,model,task,source,client_region,upstream_region,client_key' });
  const fetching = ctx.get<Leaderboard>('leaderboard', params).then(
    (lb) => {
      const v = toValues(lb);
      valuesSeen.set(window, v);
      return v;
    },
    // The filters are a convenience: without them the page still shows its data.
    () => {
      const v = valuesSeen.get(window) ?? { ...kNoValues, loaded: true };
      valuesSeen.set(window, v);
      return v;
    },
  );
  if (valuesSeen.has(window)) return fetching;
  ctx.defer(fetching);
  return kNoValues;
}

const kFilterLabels: Record<SharedFilter, string> = {
  window: 'Window',
  client_region: 'Client region',
  upstream_region: 'Upstream region',
  task: 'Task',
  source: 'Source',
  client_key: 'Client key',
};

/** The filter bar: a select per shared filter in `keys`, then any page-specific fields. The
 *  client key's select shows only where records carry keys (a gateway's), or one is chosen. */
export function filterBar(
  ctx: PageContext,
  values: LabelValues,
  keys: readonly SharedFilter[],
  defaultWindow: string,
  extra: readonly HTMLElement[] = [],
): HTMLElement {
  const params = ctx.route.params;
  const shown = keys.filter((key) => key !== 'client_key' || values.client_key.length > 0 || params.has(key));
  const fields = shown.map((key) => {
    const current = params.get(key) ?? '';
    const set = (v: string) => ctx.setParams(withParam(params, key, v));
    if (key === 'window') {
      const w = current || defaultWindow;
      const opts: Option[] = kWindows.map((x) => ({ value: x, label: x }));
      if (!opts.some((o) => o.value === w)) opts.push({ value: w, label: w });
      return select(key, kFilterLabels[key], w, opts, set);
    }
    const known = values[key];
    const list = current && !known.includes(current) ? [...known, current] : known;
    return select(key, kFilterLabels[key], current, [{ value: '', label: 'all' }, ...list.map((v) => ({ value: v, label: v }))], set);
  });
  return h(
    'form',
    { class: 'filters', 'aria-label': 'Filters', 'data-values': values.loaded ? 'loaded' : 'pending', onsubmit: (e: Event) => e.preventDefault() },
    fields,
    extra,
  );
}

// ---------------------------------------------------------------------------- export

export interface ExportSource {
  /** What the data is, for the link text ("leaderboard", "TTFT CDF"). */
  label: string;
  path: string;
  params?: URLSearchParams;
}

/** "CSV" and "JSON" download links for the API answers the view shows, with the same
 *  filters: the JSON link is the very URL the page fetched, the CSV one adds format=csv (the
 *  server writes RFC 4180). */
export function exportLinks(sources: readonly ExportSource[]): HTMLElement {
  const file = (s: ExportSource, ext: string) => {
    const w = s.params?.get('window');
    return `tokenradar-${s.path.replace(/\W+/g, '-')}${w ? `-${w}` : ''}.${ext}`;
  };
  return h(
    'p',
    { class: 'export', 'data-export': '' },
    h('span', { class: 'muted' }, 'Export: '),
    sources.map((s, i) => {
      const csv = new URLSearchParams(s.params);
      csv.set('format', 'csv');
      const multi = sources.length > 1;
      return h(
        'span',
        { class: 'export-item' },
        i > 0 ? ' · ' : null,
        multi ? `${s.label} ` : null,
        h('a', { href: apiUrl(s.path, csv), download: file(s, 'csv'), 'data-format': 'csv', 'data-key': `export:csv:${i}`, 'aria-label': `${s.label} as CSV` }, 'CSV'),
        ' ',
        h('a', { href: apiUrl(s.path, s.params), download: file(s, 'json'), 'data-format': 'json', 'data-key': `export:json:${i}`, 'aria-label': `${s.label} as JSON` }, 'JSON'),
      );
    }),
  );
}
