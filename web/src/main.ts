// The shell: header with navigation, theme toggle and "updated N s ago", the router, and the
// poll loop that keeps the current page live.

import './style.css';

import { h, replaceChildren } from './dom';
import { fmtAgo } from './format';
import { Context, erase, type AnyPage } from './page';
import { gatewayPage } from './pages/gateway';
import { leaderboardPage } from './pages/leaderboard';
import { modelPage } from './pages/model';
import { regionsPage } from './pages/regions';
import { statusPage } from './pages/status';
import { comparePage } from './pages/compare';
import { timeOfDayPage } from './pages/timeofday';
import { href, parseRoute, sharedParams, type PageName, type Route } from './route';
import { errorBox, heading } from './widgets';
import { applyTheme, effectiveTheme, nextMode, onSystemThemeChange, setThemeMode, themeMode } from './theme';

const pages: Record<PageName, AnyPage> = {
  status: erase(statusPage),
  compare: erase(comparePage),
  leaderboard: erase(leaderboardPage),
  model: erase(modelPage),
  'time-of-day': erase(timeOfDayPage),
  regions: erase(regionsPage),
  gateway: erase(gatewayPage),
};

const kNav: Array<{ page: PageName; label: string }> = [
  { page: 'status', label: 'Status' },
  { page: 'leaderboard', label: 'Leaderboard' },
  { page: 'compare', label: 'Compare' },
  { page: 'time-of-day', label: 'Time of day' },
  { page: 'regions', label: 'Regions' },
  { page: 'gateway', label: 'Gateway' },
];

// ?poll=<ms> (in the page URL, not the hash) shortens the interval for tests and kiosks.
function pollInterval(): number {
  const v = Number(new URLSearchParams(location.search).get('poll'));
  return Number.isFinite(v) && v >= 250 ? v : 10_000;
}

const main = h('main', { id: 'main', tabindex: -1, 'data-state': 'loading', 'aria-live': 'off' });
const nav = h('nav', { 'aria-label': 'Pages' });
const updated = h('span', { class: 'updated', id: 'updated' }, 'loading…');
const themeButton = h('button', { type: 'button', class: 'theme-toggle', id: 'theme-toggle' });

function themeLabel(): void {
  const mode = themeMode();
  themeButton.textContent = `Theme: ${mode}`;
  themeButton.setAttribute('aria-label', `Colour theme: ${mode} (${effectiveTheme()}). Change to ${nextMode(mode)}`);
}

let lastSuccess = 0;
let lastError: string | null = null;
function tick(): void {
  if (lastError !== null) {
    updated.textContent = lastSuccess ? `update failed (${lastError}); last update ${fmtAgo(Date.now() - lastSuccess)}` : `update failed (${lastError})`;
    updated.classList.add('stale');
  } else if (lastSuccess) {
    updated.textContent = `updated ${fmtAgo(Date.now() - lastSuccess)}`;
    updated.classList.remove('stale');
  }
}

function renderNav(route: Route): void {
  const params = sharedParams(route.params);
  replaceChildren(
    nav,
    h(
      'ul',
      null,
      kNav.map((item) => {
        const current = item.page === route.page || (item.page === 'leaderboard' && route.page === 'model');
        return h('li', null, h('a', { href: href(item.page, [], params), 'data-page': item.page, 'aria-current': current ? 'page' : null }, item.label));
      }),
    ),
  );
}

let seq = 0;
let renderedHash = '';
let renderedTheme = '';
let renderedIncomplete = false;
let current: Context | null = null;
let firstRender = true;

function pathOf(hash: string): string {
  return hash.split('?')[0] ?? hash;
}

// Loads the page for the current hash; renders when the route or theme changed or any API
// resource came back with new data. A newer call makes older ones drop their results.
async function refresh(force = false): Promise<void> {
  const my = ++seq;
  const hash = location.hash || '#/leaderboard';
  const route = parseRoute(hash);
  const theme = effectiveTheme();
  const navigated = hash !== renderedHash;
  const page = pages[route.page];
  if (navigated) {
    main.dataset.state = 'loading';
    main.setAttribute('aria-busy', 'true');
    renderNav(route);
  }
  const ctx = new Context(route, (params) => {
    location.hash = href(route.page, route.args, params);
  });
  let data: unknown;
  let etags = '';
  try {
    data = await page.load(ctx);
    // Taken with the data: fetches that land later (deferred filter values) are the next render's.
    etags = JSON.stringify(Object.fromEntries(ctx.etags));
  } catch (err) {
    if (my !== seq) return;
    lastError = err instanceof Error ? err.message : String(err);
    tick();
    // A failed poll keeps the page as it was; a failed navigation says why it is empty.
    if (navigated || main.dataset.state !== 'ready') {
      current?.dispose();
      current = null;
      renderedHash = hash;
      document.title = `${page.title(route)} · TokenRadar`;
      replaceChildren(main, heading(page.title(route)), errorBox(err));
      main.dataset.state = 'error';
      delete main.dataset.etags;
      main.dataset.route = hash;
      main.removeAttribute('aria-busy');
    }
    return;
  }
  if (my !== seq) return;
  lastSuccess = Date.now();
  lastError = null;
  tick();
  if (!force && !renderedIncomplete && !navigated && theme === renderedTheme && !ctx.changed && main.dataset.state === 'ready') {
    ctx.dispose();
    return;
  }
  // Keep keyboard focus on the same control across a re-render (a filter, a sort button).
  const active = document.activeElement as HTMLElement | null;
  const focusKey = active && main.contains(active) ? active.closest<HTMLElement>('[data-key]')?.dataset.key : undefined;
  const pageChanged = pathOf(hash) !== pathOf(renderedHash);
  const scroll = window.scrollY;
  // Opened data tables stay open.
  const openKeys = new Set(Array.from(main.querySelectorAll<HTMLElement>('details[open] > summary[data-key]')).map((el) => el.dataset.key));
  current?.dispose();
  current = ctx;
  document.title = `${page.title(route)} · TokenRadar`;
  replaceChildren(main, page.render(ctx, data));
  renderedHash = hash;
  renderedTheme = theme;
  main.dataset.state = 'ready';
  main.dataset.route = hash;
  // Which API answers this render shows (URL -> ETag), set in the same task as the DOM: live
  // data moves on, and a test compares the page with the API answer at these ETags.
  main.dataset.etags = etags;
  main.removeAttribute('aria-busy');
  for (const summary of Array.from(main.querySelectorAll<HTMLElement>('details > summary[data-key]'))) {
    if (openKeys.has(summary.dataset.key)) (summary.parentElement as HTMLDetailsElement).open = true;
  }
  const target = focusKey
    ? Array.from(main.querySelectorAll<HTMLElement>('[data-key]')).find((el) => el.dataset.key === focusKey)
    : undefined;
  if (target) target.focus();
  else if (pageChanged && !firstRender) main.querySelector<HTMLElement>('h1')?.focus();
  if (!pageChanged) window.scrollTo(0, scroll);
  if (firstRender) {
    firstRender = false;
    performance.mark('tokenradar:first-render');
  }
  // Deferred work (filter values) renders again when it lands; if a newer refresh starts in
  // the meantime, renderedIncomplete makes that one render instead.
  renderedIncomplete = ctx.deferred.length > 0;
  if (renderedIncomplete) {
    await Promise.allSettled(ctx.deferred);
    if (my === seq) await refresh(true);
  }
}

function schedule(): void {
  const every = pollInterval();
  let timer = 0;
  const loop = () => {
    timer = window.setTimeout(async () => {
      if (!document.hidden) await refresh();
      loop();
    }, every);
  };
  loop();
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) return;
    window.clearTimeout(timer);
    void refresh().then(loop);
  });
}

function start(): void {
  applyTheme();
  themeLabel();
  themeButton.addEventListener('click', () => {
    setThemeMode(nextMode(themeMode()));
    themeLabel();
    void refresh();
  });
  onSystemThemeChange(() => {
    applyTheme();
    themeLabel();
    void refresh();
  });
  const app = document.getElementById('app');
  if (!app) throw new Error('index.html: #app missing');
  replaceChildren(
    app,
    h('a', { class: 'skip', href: '#main', onclick: (e: Event) => { e.preventDefault(); main.focus(); } }, 'Skip to content'),
    h('header', { class: 'top' }, h('a', { class: 'brand', href: '#/leaderboard' }, 'TokenRadar'), nav, h('div', { class: 'top-right' }, updated, themeButton)),
    main,
    h('footer', null, 'Live latency from measured requests. Numbers carry their sample count (n); cells with too few samples say so instead of showing a number.'),
  );
  window.addEventListener('hashchange', () => void refresh());
  window.setInterval(tick, 1000);
  void refresh();
  schedule();
}

start();
