// Hash routes: #/status, #/leaderboard, #/model/<provider>/<model>, #/compare, #/time-of-day,
// #/regions, #/gateway, each with an optional query (?window=7d&task=chat) that holds the filters, so
// every view can be bookmarked and shared.

export const kPages = ['status', 'leaderboard', 'model', 'compare', 'time-of-day', 'regions', 'gateway'] as const;
export type PageName = (typeof kPages)[number];

export interface Route {
  page: PageName;
  /** Path segments after the page name, decoded (model: [provider, model]). */
  args: string[];
  params: URLSearchParams;
}

/** Filters that mean the same on every page and survive navigation between pages. */
export const kSharedFilters = ['window', 'client_region', 'upstream_region', 'task', 'source', 'client_key'] as const;
export type SharedFilter = (typeof kSharedFilters)[number];

export const kWindows = ['15m', '1h', '6h', '24h', '7d', '30d'] as const;

function isPage(s: string): s is PageName {
  return (kPages as readonly string[]).includes(s);
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const [first = '', ...rest] = path.split('/');
  const page = isPage(first) ? first : 'leaderboard';
  return { page, args: isPage(first) ? rest.map(decode) : [], params };
}

export function href(page: PageName, args: readonly string[], params: URLSearchParams): string {
  const path = [page, ...args.map((a) => encodeURIComponent(a))].join('/');
  const query = params.toString();
  return `#/${path}${query ? `?${query}` : ''}`;
}

/** The shared filters of `params` (for links to other pages). */
export function sharedParams(params: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const key of kSharedFilters) {
    for (const v of params.getAll(key)) out.append(key, v);
  }
  return out;
}

/** Query parameters for the API from the route's filters; `window` falls back to the
 *  page's default so the query says what the page shows. */
export function apiParams(route: Route, defaultWindow: string): URLSearchParams {
  const out = sharedParams(route.params);
  if (!out.has('window')) out.set('window', defaultWindow);
  return out;
}

/** A copy of the route's params with `key` set to `value` (or removed when empty). */
export function withParam(params: URLSearchParams, key: string, value: string): URLSearchParams {
  const out = new URLSearchParams(params);
  out.delete(key);
  if (value !== '') out.set(key, value);
  return out;
}
