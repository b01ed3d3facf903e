// What a page is: it loads its API resources for a route, then renders them. The shell
// (main.ts) re-runs load() on every poll and calls render() again only when some resource
// changed (a 200 rather than a 304), the route changed, or the theme changed.

import { getJson } from './api';
import type { Route } from './route';

export interface PageContext {
  readonly route: Route;
  /** GET an API resource through the ETag cache; remembers whether anything changed. */
  get<T>(path: string, params?: URLSearchParams): Promise<T>;
  /** Navigates to the same page with new query parameters (a filter changed). */
  setParams(params: URLSearchParams): void;
  /** Runs before the next render replaces this one (charts release their canvases). */
  onDispose(fn: () => void): void;
  /** Work that must not hold up the first render (the filter values): when it settles the
   *  page renders again. */
  defer(work: Promise<unknown>): void;
}

export interface Page<D> {
  title(route: Route): string;
  load(ctx: PageContext): Promise<D>;
  render(ctx: PageContext, data: D): Node;
}

/** Type erasure so pages with different data types share one table. */
export interface AnyPage {
  title(route: Route): string;
  load(ctx: PageContext): Promise<unknown>;
  render(ctx: PageContext, data: unknown): Node;
}

export function erase<D>(page: Page<D>): AnyPage {
  return page as unknown as AnyPage;
}

export class Context implements PageContext {
  changed = false;
  /** URL -> ETag of every resource fetched so far: the snapshot the data came from. */
  readonly etags = new Map<string, string>();
  readonly deferred: Array<Promise<unknown>> = [];
  private readonly disposers: Array<() => void> = [];

  constructor(
    readonly route: Route,
    private readonly navigate: (params: URLSearchParams) => void,
  ) {}

  async get<T>(path: string, params?: URLSearchParams): Promise<T> {
    const r = await getJson<T>(path, params);
    if (r.changed) this.changed = true;
    if (r.etag !== null) this.etags.set(r.url, r.etag);
    return r.data;
  }

  setParams(params: URLSearchParams): void {
    this.navigate(params);
  }

  onDispose(fn: () => void): void {
    this.disposers.push(fn);
  }

  defer(work: Promise<unknown>): void {
    this.deferred.push(work);
  }

  dispose(): void {
    for (const fn of this.disposers.splice(0)) fn();
  }
}
