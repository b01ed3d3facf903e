#!/usr/bin/env node
// Browser tests of the dashboard against a running server (ctest: web.dashboard).
//
//   node web/tests/run.mjs --server demo --binary build/release/tokenradar --out build/release/web-test-output
//   node web/tests/run.mjs --server mock            # tests/mock-server.mjs, while the observatory is missing
//   node web/tests/run.mjs --server mock --churn-ms 200   # ... with its data changing every 200 ms
//   node web/tests/run.mjs --url http://127.0.0.1:8080/   # something already running
//
// Environment: TOKENRADAR_WEB_SERVER (demo|mock), TOKENRADAR_BINARY, TOKENRADAR_WEB_TEST_OUT,
// CHROMIUM (default /usr/bin/chromium).
//
// Each page: loads with no console errors, shows the numbers a direct fetch of the API
// returns, filters change the API query and the table; a label submitted as HTML renders as
// text; the keyboard reaches every page; light and dark screenshots; first-load time and the
// JavaScript size are measured and held to budget.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

import { compareHeatmap, compareLeaderboard, fmtN, heatmapDom, leaderboardDom, shows, xssRecords } from './lib/compare.mjs';
import { Results, assert, ensureDir, launchBrowser, log, newPage, rel, startServer, stopServer, waitReady } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const webDir = path.resolve(here, '..');
const repo = path.resolve(webDir, '..');
const argv = process.argv.slice(2);
const opt = (name, env, dflt) => {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0 && argv[i + 1] !== undefined) return argv[i + 1];
  return process.env[env] ?? dflt;
};
const serverKind = opt('server', 'TOKENRADAR_WEB_SERVER', 'demo');
const binary = path.resolve(opt('binary', 'TOKENRADAR_BINARY', path.join(repo, 'build/release/tokenradar')));
const outDir = ensureDir(path.resolve(opt('out', 'TOKENRADAR_WEB_TEST_OUT', path.join(repo, 'build/release/web-test-output'))));
const givenUrl = opt('url', 'TOKENRADAR_WEB_URL', '');
const dist = path.join(webDir, 'dist');
const only = opt('only', 'TOKENRADAR_WEB_TEST_ONLY', '');
const churnMs = opt('churn-ms', 'TOKENRADAR_WEB_CHURN_MS', '0');
const churning = serverKind === 'mock' && !givenUrl && Number(churnMs) > 0;

const kJsBudgetBytes = 300 * 1024;
// First loads are measured and recorded (first-load*.json); their targets (leaderboard 1 s,
// status 300 ms) are judged on those records (web/README.md), not here: CI's machine ran the
// status page at 602-1133 ms where this one runs 331-445. The test fails only past
// kFirstLoadFailMs, a page that waits on something it should not (a timeout, a serial fetch).
const kFirstLoadFailMs = 2500;
const kTimeZone = 'America/New_York';
const kXss = '<img src=x onerror=alert(1)>';
const kXssProvider = 'xss-probe';

// ------------------------------------------------------------------ helpers

let base = '';
const apiUrl = (p, params) => `${new URL(`api/v1/${p}`, base)}${params ? `?${new URLSearchParams(params)}` : ''}`;

async function api(p, params) {
  const res = await fetch(apiUrl(p, params));
  if (!res.ok) throw new Error(`GET ${apiUrl(p, params)}: ${res.status} ${await res.text()}`);
  return { etag: res.headers.get('etag'), body: await res.json() };
}

function sameParams(url, pathname, expected) {
  const u = new URL(url);
  if (!u.pathname.endsWith(`/api/v1/${pathname}`)) return false;
  const want = new URLSearchParams(expected);
  const a = [...u.searchParams.entries()].sort().join('&');
  const b = [...want.entries()].sort().join('&');
  return a === b;
}

/** Reads the DOM with `extract` and, in the same task (so no render can fall in between), the
 *  ETags the page says this render shows (`main[data-etags]`, URL -> ETag). */
function lookAtPage(page, extract) {
  const [fn, arg] = Array.isArray(extract) ? extract : [extract, undefined];
  return page.evaluate(`(() => {
    const dom = (${fn.toString()})(${arg === undefined ? '' : JSON.stringify(arg)});
    return { dom, etags: JSON.parse(document.querySelector('main')?.dataset.etags || '{}') };
  })()`);
}

/** The API's answer at `etag` for the page's URL: the body of a response the page received
 *  with that ETag (a strong ETag, a hash of the body: any of them will do), else a direct fetch
 *  if the API still answers at it. */
async function apiAt(record, url, etag) {
  for (const r of record.responses.filter((x) => x.url === url && x.status === 200 && x.etag === etag)) {
    await r.bodyRead;
    if (r.body) return r.body;
  }
  const res = await fetch(url);
  const body = await res.json();
  assert(res.headers.get('etag') === etag, `${url}: the page's body at ETag ${etag} was not captured and the API has moved on to ${res.headers.get('etag')}`);
  return body;
}

/**
 * Compares what the page shows with what the API answered for the snapshot the page rendered.
 * The demo's data moves on while we look, so the page's current ETag for the URL is read with
 * the DOM and the comparison is against the API body at that ETag, never a newer one. Another
 * look is taken only while the page is still drawing (a chart waits for layout); the data
 * changing in between cannot make it fail.
 */
async function matchesApi(page, record, pathname, params, extract, compare, tries = 5) {
  let last = '';
  for (let i = 0; i < tries; i++) {
    const { dom, etags } = await lookAtPage(page, extract);
    const url = Object.keys(etags).find((u) => sameParams(u, pathname, params));
    assert(url, `the page does not show ${pathname}?${new URLSearchParams(params)} (it shows ${Object.keys(etags).join(', ') || 'no ETags'})`);
    const body = await apiAt(record, url, etags[url]);
    const problems = compare(dom, body);
    if (problems.length === 0) return `(${pathname}: ${i + 1} look${i ? 's' : ''})`;
    last = `at ETag ${etags[url]}:\n${problems.slice(0, 8).join('\n')}`;
    await page.waitForTimeout(500);
  }
  throw new Error(`${pathname}?${new URLSearchParams(params)}: the page does not show the API's answer ${last}`);
}

function expectNoConsoleErrors(record, allow = []) {
  const errors = record.consoleErrors.filter((e) => !allow.some((re) => re.test(e)));
  assert(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  assert(record.dialogs.length === 0, `dialogs fired: ${record.dialogs.join(' | ')}`);
}

async function open(context, hash, poll = 1000) {
  const { page, record } = await newPage(context);
  await page.goto(`${base}?poll=${poll}${hash}`);
  await waitReady(page, hash.split('?')[0]);
  return { page, record };
}

// ------------------------------------------------------------------ checks

async function checkLeaderboard(context) {
  const { page, record } = await open(context, '#/leaderboard');
  const note = await matchesApi(page, record, 'leaderboard', { window: '24h' }, leaderboardDom, compareLeaderboard);
  const h1 = await page.textContent('h1');
  assert(h1 === 'Leaderboard', `h1 '${h1}'`);
  // The lazy chunks stay away from the pages that do not draw charts or the map.
  const lazy = record.requests.filter((u) => /\/assets\/(map|charts)-/.test(u));
  assert(lazy.length === 0, `the leaderboard loaded ${lazy.join(', ')}`);
  expectNoConsoleErrors(record);
  await page.close();
  return note;
}

async function checkFilters(context) {
  const { page, record } = await open(context, '#/leaderboard');
  const notes = [];
  let applied = 0;
  for (const key of ['task', 'source', 'client_region', 'upstream_region', 'client_key']) {
    const options = await page.$$eval(`#f-${key} option`, (os) => os.map((o) => o.value).filter(Boolean));
    if (options.length < 2) {
      notes.push(`${key}: ${options.length} value(s), skipped`);
      continue;
    }
    const value = options[0];
    const reqPromise = page.waitForRequest((r) => {
      const u = new URL(r.url());
      return u.pathname.endsWith('/api/v1/leaderboard') && u.searchParams.get(key) === value && !u.searchParams.has('by');
    });
    await page.focus(`#f-${key}`);
    await page.selectOption(`#f-${key}`, value);
    await reqPromise;
    await waitReady(page, '#/leaderboard');
    assert(decodeURIComponent(page.url()).includes(`${key}=${value}`), `hash lacks ${key}=${value}: ${page.url()}`);
    const params = { window: '24h', [key]: value };
    await matchesApi(page, record, 'leaderboard', params, leaderboardDom, compareLeaderboard);
    const dom = await page.evaluate(leaderboardDom);
    const shown = dom.reduce((a, r) => a + Number(r.cells.samples?.value ?? 0), 0);
    // Fetched after the filtered view: live data only adds samples, so this total is an upper bound.
    const totalSamples = (await api('leaderboard', { window: '24h' })).body.rows.reduce((a, r) => a + r.samples, 0);
    assert(shown < totalSamples, `${key}=${value}: ${shown} samples shown, not fewer than the unfiltered ${totalSamples}`);
    // Focus stays on the filter that changed (the page re-rendered around it).
    const focused = await page.evaluate(() => document.activeElement?.id ?? '');
    assert(focused === `f-${key}`, `focus after filtering: '${focused}'`);
    await page.selectOption(`#f-${key}`, '');
    await waitReady(page, '#/leaderboard');
    applied++;
  }
  assert(applied >= 1, `no label filter could be tried: ${notes.join('; ')}`);
  // Window: a different window is a different query and a different table.
  const reqPromise = page.waitForRequest((r) => {
    const u = new URL(r.url());
    return u.pathname.endsWith('/api/v1/leaderboard') && u.searchParams.get('window') === '1h' && !u.searchParams.has('by');
  });
  await page.selectOption('#f-window', '1h');
  await reqPromise;
  await waitReady(page, '#/leaderboard?window=1h');
  await matchesApi(page, record, 'leaderboard', { window: '1h' }, leaderboardDom, compareLeaderboard);
  expectNoConsoleErrors(record);
  await page.close();
  return notes.length ? `(${notes.join('; ')})` : '';
}

async function checkModel(context) {
  const lb = (await api('leaderboard', { window: '24h' })).body;
  const row = lb.rows.find((r) => !r.insufficient);
  assert(row, 'no model with enough samples in the last 24h');
  const { page, record } = await open(context, '#/leaderboard');
  // Through the link, as a user would.
  await page.click(`#leaderboard tbody tr[data-provider="${row.provider}"][data-model="${row.model}"] a`);
  await waitReady(page, '#/model/');
  const params = { window: '24h', provider: row.provider, model: row.model };
  const note = await matchesApi(
    page,
    record,
    'leaderboard',
    params,
    () => Object.fromEntries(Array.from(document.querySelectorAll('[data-stat]')).map((el) => [el.dataset.stat, { value: el.dataset.value ?? null, text: el.querySelector('dd')?.textContent ?? '' }])),
    (dom, body) => {
      const r = body.rows[0];
      const p = [];
      if (!r) return ['API has no row'];
      if (Number(dom.samples?.value) !== r.samples) p.push(`samples: page ${dom.samples?.value}, API ${r.samples}`);
      if (Number(dom.ttft_p50?.value) !== r.ttft_ms.p50) p.push(`ttft p50: page ${dom.ttft_p50?.value}, API ${r.ttft_ms.p50}`);
      if (!dom.ttft_p50?.text.includes(fmtN(r.samples))) p.push(`ttft p50 without n: '${dom.ttft_p50?.text}'`);
      if (Number(dom.tps_p50?.value) !== r.decode_tps_p50) p.push(`tokens/s: page ${dom.tps_p50?.value}, API ${r.decode_tps_p50}`);
      return p;
    },
  );
  const h1 = await page.textContent('h1 .model-name');
  assert(h1 === row.model, `h1 '${h1}', expected '${row.model}'`);
  // CDFs: the chart plots what the distribution API returns, series for series, point for point.
  for (const metric of ['ttft', 'tpot']) {
    await matchesApi(
      page,
      record,
      'distribution',
      { ...params, metric },
      [
        (key) => {
          const el = document.querySelector(`[data-chart="${key}"]`);
          return el ? { series: Number(el.dataset.series), points: el.dataset.points, drawn: !!el.querySelector('.chart-canvas[data-drawn] canvas') } : null;
        },
        `${metric}-cdf`,
      ],
      (dom, body) => {
        const series = body.series.filter((s) => s.provider === row.provider && s.model === row.model && !s.insufficient);
        if (!dom) return [`no ${metric} CDF chart`];
        const p = [];
        if (dom.series !== series.length) p.push(`${metric} CDF series: page ${dom.series}, API ${series.length}`);
        if (dom.points !== series.map((s) => s.cdf.length).join(',')) p.push(`${metric} CDF points: page ${dom.points}, API ${series.map((s) => s.cdf.length)}`);
        if (!dom.drawn) p.push(`${metric} CDF not drawn`);
        return p;
      },
    );
  }
  const tsParams = { ...params, metric: 'ttft', q: '0.5,0.95' };
  await matchesApi(
    page,
    record,
    'timeseries',
    tsParams,
    () => {
      const el = document.querySelector('[data-chart="ttft-time"]');
      return el ? { series: Number(el.dataset.series), points: Number(el.dataset.points) } : null;
    },
    (dom, body) => {
      const s = body.series.find((x) => x.provider === row.provider && x.model === row.model);
      if (!dom || !s) return ['no TTFT time series'];
      return dom.points === s.points.length && dom.series === 2 ? [] : [`time series: page ${dom.series}x${dom.points}, API 2x${s.points.length}`];
    },
  );
  expectNoConsoleErrors(record);
  await page.close();
  return note;
}

async function checkTimeOfDay(context) {
  const { page, record } = await open(context, '#/time-of-day');
  const tz = await page.getAttribute('[data-tz]', 'data-tz');
  assert(tz === kTimeZone, `time zone shown '${tz}', the browser's is ${kTimeZone}`);
  const all = { window: '7d', metric: 'ttft', q: '0.5', tz: kTimeZone, by: 'model' };
  await matchesApi(page, record, 'heatmap', all, heatmapDom, compareHeatmap);
  // One model, hour x weekday.
  const lb = (await api('leaderboard', { window: '7d' })).body;
  const row = lb.rows.find((r) => !r.insufficient);
  assert(row, 'no model with enough samples in 7d');
  await page.selectOption('#f-model', JSON.stringify([row.provider, row.model]));
  await waitReady(page, '#/time-of-day?');
  await page.waitForFunction(() => document.querySelector('#heatmap')?.dataset.by === 'weekday');
  const one = { window: '7d', provider: row.provider, model: row.model, metric: 'ttft', q: '0.5', tz: kTimeZone, by: 'weekday' };
  const note = await matchesApi(page, record, 'heatmap', one, heatmapDom, compareHeatmap);
  const api7 = (await api('heatmap', one)).body;
  assert(api7.cells.some((c) => !c.insufficient), 'the weekday heatmap has no cell with enough samples: nothing compared');
  // Quantile select: p95 is a new query.
  await page.selectOption('#f-q', '0.95');
  await waitReady(page, '#/time-of-day?');
  await matchesApi(page, record, 'heatmap', { ...one, q: '0.95' }, heatmapDom, compareHeatmap);
  expectNoConsoleErrors(record);
  await page.close();
  return note;
}

async function checkRegions(context) {
  const { page, record } = await open(context, '#/regions');
  const note = await matchesApi(
    page,
    record,
    'regions',
    { window: '24h' },
    () =>
      Array.from(document.querySelectorAll('#regions tbody tr')).map((tr) => ({
        key: [tr.dataset.clientRegion, tr.dataset.upstreamRegion, tr.dataset.provider, tr.dataset.model].join('|'),
        samples: tr.querySelector('[data-col=samples]')?.dataset.value ?? null,
        ttft: tr.querySelector('[data-col=ttft_p50]')?.dataset.value ?? null,
        ttftText: tr.querySelector('[data-col=ttft_p50]')?.textContent ?? null,
        insufficient: tr.classList.contains('is-insufficient'),
      })),
    (dom, body) => {
      const p = [];
      if (dom.length !== body.rows.length) p.push(`rows: page ${dom.length}, API ${body.rows.length}`);
      const byKey = new Map(dom.map((r) => [r.key, r]));
      for (const r of body.rows) {
        const k = [r.client_region, r.upstream_region, r.provider, r.model].join('|');
        const d = byKey.get(k);
        if (!d) {
          p.push(`${k}: missing`);
          continue;
        }
        if (Number(d.samples) !== r.samples) p.push(`${k} samples: page ${d.samples}, API ${r.samples}`);
        if (d.insufficient !== r.insufficient) p.push(`${k} insufficient: page ${d.insufficient}`);
        // A row with enough samples may still have no TTFT (only non-streamed or failed
        // requests in the window): the API says null and the page shows '–' with no value.
        const want = r.ttft_ms.p50;
        const ttftShown = want === null ? d.ttft === null && d.ttftText === '–' : Number(d.ttft) === want && shows(d.ttftText, want);
        if (!r.insufficient && !ttftShown) p.push(`${k} ttft p50: page ${d.ttft} '${d.ttftText}', API ${want}`);
      }
      return p;
    },
  );
  expectNoConsoleErrors(record);
  await page.close();
  return note;
}

async function checkGateway(context) {
  const { page, record } = await open(context, '#/gateway');
  const gatewayDom = () => ({
    stats: Object.fromEntries(Array.from(document.querySelectorAll('[data-stat]')).map((el) => [el.dataset.stat, { value: el.dataset.value ?? null, text: el.querySelector('dd')?.textContent ?? '' }])),
    empty: !!document.querySelector('main .empty'),
    keys: Array.from(document.querySelectorAll('#gw-keys tbody tr')).map((tr) => ({
      key: tr.dataset.clientKey,
      cells: Object.fromEntries(Array.from(tr.querySelectorAll('[data-col]')).map((td) => [td.dataset.col, { value: td.dataset.value ?? null, text: td.textContent }])),
    })),
  });
  const compareGateway = (dom, g) => {
    if (g.attempts === 0) return dom.empty ? [] : ['no gateway traffic, but the page does not say so'];
    const p = [];
    const num = (k) => (dom.stats[k] ? Number(dom.stats[k].value) : undefined);
    if (num('requests') !== g.requests) p.push(`requests: page ${num('requests')}, API ${g.requests}`);
    if (num('attempts') !== g.attempts) p.push(`attempts: page ${num('attempts')}, API ${g.attempts}`);
    if (num('fallbacks') !== (g.route.fallback ?? 0)) p.push(`fallbacks: page ${num('fallbacks')}, API ${g.route.fallback}`);
    const total = Object.values(g.cache).reduce((a, b) => a + b, 0);
    const hits = (g.cache.exact ?? 0) + (g.cache.semantic ?? 0);
    if (total > 0 && Math.abs(num('cache_hit_rate') - hits / total) > 1e-12) p.push(`cache hit rate: page ${num('cache_hit_rate')}, API ${hits}/${total}`);
    const ov = g.overhead_ms;
    if (ov && !ov.insufficient && ov.p50 !== null) {
      if (num('overhead_p50') !== ov.p50) p.push(`overhead p50: page ${num('overhead_p50')}, API ${ov.p50}`);
      if (!dom.stats.overhead_p50.text.includes(fmtN(ov.samples))) p.push(`overhead p50 without n: '${dom.stats.overhead_p50.text}'`);
    } else if (!/insufficient/.test(dom.stats.overhead_p50?.text ?? '')) {
      p.push('overhead is insufficient in the API but the page shows a number');
    }
    // Per client key: the table holds every API row, with its counts and quantiles; none
    // when no request came with a key.
    const keys = g.keys ?? [];
    if (!keys.some((k) => k.client_key !== '')) {
      if (dom.keys.length > 0) p.push('a per-key table without any client key in the API');
      return p;
    }
    if (dom.keys.length !== keys.length) p.push(`key rows: page ${dom.keys.length}, API ${keys.length}`);
    const byKey = new Map(dom.keys.map((r) => [r.key, r.cells]));
    for (const k of keys) {
      const cells = byKey.get(k.client_key);
      if (!cells) {
        p.push(`key '${k.client_key}': missing`);
        continue;
      }
      for (const col of ['requests', 'errors', 'prompt_tokens', 'output_tokens']) {
        if (Number(cells[col]?.value) !== k[col]) p.push(`key '${k.client_key}' ${col}: page ${cells[col]?.value}, API ${k[col]}`);
      }
      for (const [col, q] of [['ttft_p50', k.ttft_ms], ['e2e_p95', k.e2e_ms]]) {
        const want = q.insufficient ? null : col.endsWith('p50') ? q.p50 : q.p95;
        const got = cells[col]?.value ?? null;
        if ((want === null) !== (got === null) || (want !== null && (Number(got) !== want || !shows(cells[col].text, want)))) {
          p.push(`key '${k.client_key}' ${col}: page ${JSON.stringify(cells[col])}, API ${want}`);
        }
      }
    }
    return p;
  };
  const note = await matchesApi(page, record, 'gateway', { window: '24h' }, gatewayDom, compareGateway);
  // The client key filter: the figures and the key table become that key's.
  const keyOptions = await page.$$eval('#f-client_key option', (os) => os.map((o) => o.value).filter(Boolean));
  if (keyOptions.length > 0) {
    const key = keyOptions[0];
    const filtered = page.waitForRequest((r) => {
      const u = new URL(r.url());
      return u.pathname.endsWith('/api/v1/gateway') && u.searchParams.get('client_key') === key;
    });
    await page.selectOption('#f-client_key', key);
    await filtered;
    await waitReady(page, '#/gateway');
    await matchesApi(page, record, 'gateway', { window: '24h', client_key: key }, gatewayDom, compareGateway);
    const rows = await page.$$eval('#gw-keys tbody tr', (trs) => trs.map((tr) => tr.dataset.clientKey));
    assert(rows.length === 1 && rows[0] === key, `filtered to '${key}', the key table shows ${JSON.stringify(rows)}`);
    await page.selectOption('#f-client_key', '');
    await waitReady(page, '#/gateway');
  }
  // TTFT with and without a provider prompt-cache hit: every row of the live API, its sample
  // counts and p50s as numbers and as text, and the p50 saved.
  const cacheNote = await matchesApi(
    page,
    record,
    'gateway/provider-cache',
    {},
    () => ({
      note: document.querySelector('[data-figure=provider_cache] p')?.textContent ?? null,
      rows: Array.from(document.querySelectorAll('#gw-provider-cache tbody tr')).map((tr) => ({
        key: `${tr.dataset.provider}|${tr.dataset.model}`,
        cells: Object.fromEntries(Array.from(tr.querySelectorAll('[data-col]')).map((td) => [td.dataset.col, { value: td.dataset.value ?? null, text: td.textContent }])),
      })),
    }),
    (dom, body) => {
      if (body.rows.length === 0) return dom.note && dom.rows.length === 0 ? [] : ['no provider-cache rows in the API, but the page neither says so nor is empty'];
      const p = [];
      if (dom.rows.length !== body.rows.length) p.push(`provider-cache rows: page ${dom.rows.length}, API ${body.rows.length}`);
      const byKey = new Map(dom.rows.map((r) => [r.key, r.cells]));
      const same = (cells, col, want) => {
        const c = cells[col];
        if (want === null) return c && c.value === null && c.text === '–';
        return c && Number(c.value) === want && shows(c.text, want);
      };
      for (const r of body.rows) {
        const k = `${r.provider}|${r.model}`;
        const cells = byKey.get(k);
        if (!cells) {
          p.push(`${k}: missing`);
          continue;
        }
        for (const side of ['hit', 'miss']) {
          if (Number(cells[`${side}_samples`]?.value) !== r[side].samples) p.push(`${k} ${side} samples: page ${cells[`${side}_samples`]?.value}, API ${r[side].samples}`);
          if (!same(cells, `${side}_p50`, r[side].p50_ms)) p.push(`${k} ${side} p50: page ${JSON.stringify(cells[`${side}_p50`])}, API ${r[side].p50_ms}`);
          if (!same(cells, `${side}_mean`, r[side].mean_ms)) p.push(`${k} ${side} mean: page ${JSON.stringify(cells[`${side}_mean`])}, API ${r[side].mean_ms}`);
        }
        const saved = r.hit.p50_ms !== null && r.miss.p50_ms !== null ? r.miss.p50_ms - r.hit.p50_ms : null;
        if (saved === null ? cells.saved_p50?.value !== null : Math.abs(Number(cells.saved_p50?.value) - saved) > 1e-9) p.push(`${k} p50 saved: page ${cells.saved_p50?.value}, API ${saved}`);
      }
      return p;
    },
  );
  expectNoConsoleErrors(record);
  await page.close();
  return `${note} ${cacheNote}`;
}

/** The Gateway page's "Response cache" section shows GET /api/v1/gateway/cache: per model the
 *  hit rate (exact + semantic over hits and misses) and the time saved, a similarity histogram
 *  for semantic models; an empty state when no model caches. The endpoint has no ETag (live
 *  counters), so the page's numbers must match one of the bodies it received. */
async function checkGatewayCache(context) {
  const { page, record } = await open(context, '#/gateway');
  await page.waitForSelector('section.cache', { timeout: 10_000 });
  const extract = () => ({
    empty: !!document.querySelector('section.cache .empty'),
    rows: Array.from(document.querySelectorAll('#cache-models tbody tr')).map((tr) => {
      const cell = (c) => tr.querySelector(`[data-col="${c}"]`);
      const num = (c) => (cell(c)?.dataset.value === undefined ? null : Number(cell(c).dataset.value));
      return { model: tr.dataset.model, mode: cell('mode')?.textContent, rate: num('hit_rate'), rateText: cell('hit_rate')?.textContent, exact: num('exact'), semantic: num('semantic'), miss: num('miss'), saved: num('saved'), savedText: cell('saved')?.textContent };
    }),
    shared: (() => {
      const note = document.querySelector('section.cache [data-key=cache-shared]');
      return note ? { kind: note.dataset.kind, hits: Number(note.dataset.hits) } : null;
    })(),
    histograms: Object.fromEntries(Array.from(document.querySelectorAll('section.cache figure[data-figure^="similarity:"]')).map((f) => [f.dataset.figure.slice('similarity:'.length), Array.from(f.querySelectorAll('tbody td[data-value]')).map((td) => Number(td.dataset.value))])),
  });
  const compare = (dom, body) => {
    const p = [];
    if (body.models.length === 0) return dom.empty ? [] : ['no model caches, but the page shows no empty state'];
    if (dom.rows.length !== body.models.length) p.push(`${dom.rows.length} rows, API ${body.models.length} models`);
    const shared = body.shared ? { kind: body.shared.kind, hits: body.shared.hits } : null;
    if (JSON.stringify(dom.shared) !== JSON.stringify(shared)) p.push(`shared tier: page ${JSON.stringify(dom.shared)}, API ${JSON.stringify(shared)}`);
    for (const m of body.models) {
      const d = dom.rows.find((r) => r.model === m.model);
      if (!d) {
        p.push(`${m.model}: no row`);
        continue;
      }
      const r = m.requests;
      const lookups = r.miss + r.exact + r.semantic;
      const want = lookups > 0 ? (r.exact + r.semantic) / lookups : null;
      if (d.mode !== m.mode) p.push(`${m.model} mode: page ${d.mode}, API ${m.mode}`);
      if (d.exact !== r.exact || d.semantic !== r.semantic || d.miss !== r.miss) p.push(`${m.model} counts: page ${d.exact}/${d.semantic}/${d.miss}, API ${r.exact}/${r.semantic}/${r.miss}`);
      if (want === null ? d.rate !== null : Math.abs(d.rate - want) > 1e-12) p.push(`${m.model} hit rate: page ${d.rate}, API ${want}`);
      if (want !== null && d.rateText !== `${(want * 100).toFixed(2)}%`) p.push(`${m.model} hit rate text '${d.rateText}', want ${(want * 100).toFixed(2)}%`);
      if (d.saved !== m.saved_seconds) p.push(`${m.model} saved: page ${d.saved}, API ${m.saved_seconds}`);
      const hist = dom.histograms[m.model];
      if (m.mode === 'semantic' && JSON.stringify(hist) !== JSON.stringify(m.similarity.counts)) p.push(`${m.model} similarity: page ${JSON.stringify(hist)}, API ${JSON.stringify(m.similarity.counts)}`);
      if (m.mode !== 'semantic' && hist) p.push(`${m.model}: a similarity histogram for an exact cache`);
    }
    return p;
  };
  let problems = [];
  for (let look = 0; look < 5; look++) {
    const dom = await page.evaluate(`(${extract.toString()})()`);
    const bodies = [];
    for (const r of record.responses.filter((x) => x.url.endsWith('/api/v1/gateway/cache') && x.status === 200)) {
      await r.bodyRead;
      if (r.body) bodies.push(r.body);
    }
    assert(bodies.length > 0, 'the page did not fetch /api/v1/gateway/cache');
    problems = bodies.map((b) => compare(dom, b));
    if (problems.some((x) => x.length === 0)) break;
    await page.waitForTimeout(500);
  }
  assert(problems.some((x) => x.length === 0), `the cache section matches none of the API's answers:\n${problems.map((x) => x.slice(0, 6).join('; ')).join('\n')}`);
  if (serverKind === 'mock' && !givenUrl) {
    // The mock's fixed numbers, by hand: 45 / (120 + 45) and (20 + 15) / (80 + 20 + 15).
    const texts = await page.$$eval('#cache-models [data-col=hit_rate]', (tds) => tds.map((t) => t.textContent));
    assert(JSON.stringify(texts) === JSON.stringify(['27.27%', '30.43%']), `hit rates read ${texts.join(', ')}`);
    const saved = await page.$$eval('#cache-models [data-col=saved]', (tds) => tds.map((t) => t.textContent));
    assert(JSON.stringify(saved) === JSON.stringify(['1 min 23 s', '1 h 06 min']), `time saved reads ${saved.join(', ')}`);
  }
  expectNoConsoleErrors(record);
  await page.close();

  // No model caches: the section says so.
  const empty = await newPage(context);
  await empty.page.route('**/api/v1/gateway/cache', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"models":[],"memory":null}' }));
  await empty.page.goto(`${base}?poll=1000#/gateway`);
  await waitReady(empty.page, '#/gateway');
  await empty.page.waitForSelector('section.cache', { timeout: 10_000 });
  const shown = await empty.page.evaluate(() => ({ empty: document.querySelector('section.cache .empty')?.textContent ?? null, table: !!document.querySelector('#cache-models') }));
  assert(shown.empty !== null && !shown.table, `no model caches, the section shows ${JSON.stringify(shown)}`);
  expectNoConsoleErrors(empty.record);
  await empty.page.close();
  return `(${problems.length} bodies seen)`;
}

/** What the Routing section shows: per virtual model its settings and, per member, every cell
 *  (raw value and text), the share bar's width and the row's breaker marking. */
function routingDom() {
  const section = document.querySelector('section.routing');
  return {
    present: !!section,
    unavailable: section?.querySelector('p.muted')?.textContent ?? null,
    cancelled: section?.querySelector('[data-key=hedges-cancelled]')?.dataset.value ?? null,
    models: Array.from(section?.querySelectorAll('figure[data-figure^="routing:"]') ?? []).map((f) => ({
      name: f.dataset.model,
      meta: Object.fromEntries(Array.from(f.querySelectorAll('[data-meta]')).map((d) => [d.dataset.meta, { value: d.dataset.value, text: d.querySelector('dd')?.textContent ?? '' }])),
      rows: Array.from(f.querySelectorAll('table.routing tbody tr')).map((tr) => ({
        key: `${tr.dataset.provider}|${tr.dataset.model}`,
        breaker: tr.dataset.breaker ?? null,
        className: tr.className,
        // The bar's width in percent (the browser normalises '8.0%' to '8%').
        bar: tr.querySelector('.bar') ? parseFloat(tr.querySelector('.bar').style.width) : null,
        cells: Object.fromEntries(Array.from(tr.querySelectorAll('[data-col]')).map((td) => [td.dataset.col, { value: td.dataset.value ?? null, text: td.textContent, title: td.getAttribute('title') ?? '' }])),
      })),
    })),
  };
}

function compareRouting(dom, body) {
  const p = [];
  if (!dom.present) return ['no Routing section'];
  if (Number(dom.cancelled) !== body.hedges_cancelled) p.push(`hedges cancelled: page ${dom.cancelled}, API ${body.hedges_cancelled}`);
  if (dom.models.length !== body.models.length) p.push(`models: page ${dom.models.map((m) => m.name)}, API ${body.models.map((m) => m.name)}`);
  const ups = new Map(body.upstreams.map((u) => [`${u.provider}|${u.model}`, u]));
  const kBreakerText = { closed: 'closed', open: 'open', half_open: 'half open' };
  body.models.forEach((m, i) => {
    const d = dom.models[i];
    if (!d || d.name !== m.name) return p.push(`model ${i}: page ${d?.name}, API ${m.name}`);
    if (d.meta.routing?.value !== m.routing) p.push(`${m.name} routing: page ${d.meta.routing?.value}, API ${m.routing}`);
    if (d.meta.hedge?.value !== String(m.hedge)) p.push(`${m.name} hedge: page ${d.meta.hedge?.value}, API ${m.hedge}`);
    if (Number(d.meta.deadline?.value) !== m.ttft_deadline_ms) p.push(`${m.name} deadline: page ${d.meta.deadline?.value}, API ${m.ttft_deadline_ms}`);
    if (d.rows.length !== m.members.length) return p.push(`${m.name}: ${d.rows.length} rows, API ${m.members.length} members`);
    m.members.forEach((mem, j) => {
      const k = `${mem.provider}|${mem.model}`;
      const r = d.rows[j];
      if (r.key !== k) return p.push(`${m.name} row ${j}: page ${r.key}, API ${k}`);
      const c = r.cells;
      if (Number(c.share?.value) !== mem.share || !shows(c.share?.text, mem.share, 100)) p.push(`${m.name} ${k} share: page ${JSON.stringify(c.share)}, API ${mem.share}`);
      if (r.bar === null || Math.abs(r.bar - mem.share * 100) > 0.05 + 1e-9) p.push(`${m.name} ${k} bar: ${r.bar}, share ${mem.share}`);
      const u = ups.get(k);
      if (!u) return p.push(`${k}: not in the API's upstreams`);
      const ms = (col, v, zeroIsNone) => {
        const want = u.measured && !(zeroIsNone && v <= 0) ? v : null;
        const ok = want === null ? c[col]?.value === null && c[col]?.text === '–' : Number(c[col]?.value) === want && shows(c[col]?.text, want);
        if (!ok) p.push(`${m.name} ${k} ${col}: page ${JSON.stringify(c[col])}, API ${want}`);
        if (c[col] && !c[col].title.includes(fmtN(u.attempts))) p.push(`${m.name} ${k} ${col} without n: '${c[col].title}'`);
      };
      ms('ttft', u.ttft_ms, false);
      ms('ttft_p95', u.ttft_p95_ms, true);
      ms('tpot', u.tpot_ms, true);
      const counts = { in_flight: u.in_flight, hedges_sent: u.hedges.sent, hedges_won: u.hedges.won, hedges_lost: u.hedges.lost, attempts: u.attempts };
      for (const [col, want] of Object.entries(counts)) if (Number(c[col]?.value) !== want || !shows(c[col]?.text, want)) p.push(`${m.name} ${k} ${col}: page ${JSON.stringify(c[col])}, API ${want}`);
      if (Number(c.error_rate?.value) !== u.error_rate || !shows(c.error_rate?.text, u.error_rate, 100)) p.push(`${m.name} ${k} error rate: page ${JSON.stringify(c.error_rate)}, API ${u.error_rate}`);
      if (r.breaker !== u.breaker || c.breaker?.text !== kBreakerText[u.breaker]) p.push(`${m.name} ${k} breaker: page ${r.breaker} '${c.breaker?.text}', API ${u.breaker}`);
      const marked = u.breaker === 'closed' ? '' : `is-${u.breaker.replace('_', '-')}`;
      if (r.className !== marked) p.push(`${m.name} ${k} row class '${r.className}', want '${marked}'`);
    });
  });
  return p;
}

/** Two answers of /api/v1/upstreams for the live check: replica-b gets slow and traffic leaves it. */
function routingBodies() {
  const u = (provider, ttft) => ({ provider, model: 'm', region: '', measured: true, ttft_ms: ttft, ttft_p95_ms: ttft * 1.5, tpot_ms: 20, in_flight: 1, error_rate: 0, breaker: 'closed', attempts: 100, failures: 0, breaker_opens: 0, tokens_last_minute: 1000, hedges: { sent: 0, won: 0, lost: 0 } });
  const body = (slow, shareB) => ({
    upstreams: [u('replica-a', 210), u('replica-b', slow)],
    models: [{ name: 'live-model', routing: 'latency', hedge: 'off', ttft_deadline_ms: 0, members: [{ provider: 'replica-a', model: 'm', local: false, share: 1 - shareB }, { provider: 'replica-b', model: 'm', local: false, share: shareB }] }],
    hedges_cancelled: 0,
  });
  return [body(220, 0.5), body(1900, 0.04)];
}

/** The Gateway page's "Routing" section shows GET /api/v1/upstreams: per virtual model its
 *  members' share of traffic (number and bar), the upstream's estimates, breaker and hedges;
 *  it revalidates with the ETag and moves its bars when traffic shifts, without a reload. */
async function checkGatewayRouting(context) {
  const { page, record } = await open(context, '#/gateway');
  const note = await matchesApi(page, record, 'upstreams', {}, routingDom, compareRouting);
  if (serverKind === 'mock' && !givenUrl) {
    // The mock's fixed numbers, by hand: traffic has left the slow replica-3, gpt-4o's first
    // choice is open and its backup half open, the local server is unmeasured.
    const dom = await page.evaluate(routingDom);
    const model = (name) => dom.models.find((m) => m.name === name);
    const row = (name, key) => model(name)?.rows.find((r) => r.key === key);
    const r3 = row('llama-3-70b', 'replica-3|llama');
    assert(r3?.cells.share.text === '8.00%' && r3.bar === 8, `replica-3's share reads ${JSON.stringify(r3?.cells.share)}, bar ${r3?.bar}`);
    assert(r3.cells.ttft.text === '1,184', `replica-3's TTFT estimate reads '${r3.cells.ttft.text}'`);
    const open = row('gpt-4o', 'openai-sim|gpt-4o');
    assert(open?.cells.breaker.text === 'open' && open.className === 'is-open', `openai-sim's breaker reads '${open?.cells.breaker.text}' (row '${open?.className}')`);
    assert(row('gpt-4o', 'backup-sim|gpt-4o')?.cells.breaker.text === 'half open', 'backup-sim is not shown half open');
    const half = await page.$eval('section.routing tr[data-provider="backup-sim"] .breaker', (el) => getComputedStyle(el).backgroundColor);
    const closed = await page.$eval('section.routing tr[data-provider="azure-sim"] .breaker', (el) => getComputedStyle(el).backgroundColor);
    assert(half !== closed, `a half-open breaker looks like a closed one (${half})`);
    assert(row('assistant', 'local|qwen-2.5-7b')?.cells.ttft.text === '–', 'the unmeasured local server shows a TTFT');
    const meta = (name, key) => model(name)?.meta[key]?.text;
    const metas = [meta('llama-3-70b', 'hedge'), meta('gpt-4o', 'hedge'), meta('gpt-4o', 'deadline'), meta('assistant', 'routing'), meta('assistant', 'hedge')];
    const wantMetas = ["after the primary's TTFT p95", 'after 250 ms', '2,000 ms', 'prefix affinity', 'off'];
    assert(JSON.stringify(metas) === JSON.stringify(wantMetas), `model settings read ${JSON.stringify(metas)}`);
    assert(dom.cancelled === '21', `hedges cancelled: ${dom.cancelled}`);
  }
  expectNoConsoleErrors(record);
  await page.close();

  // Live: replica-b slows down and traffic leaves it; the page revalidates (304 while nothing
  // changed) and its bar shrinks without a reload.
  const [before, after] = routingBodies();
  let phase = 0;
  const live = await newPage(context);
  await live.page.route('**/api/v1/upstreams', (route) => {
    const etag = `"live${phase}"`;
    if (route.request().headers()['if-none-match'] === etag) return route.fulfill({ status: 304, headers: { etag, 'cache-control': 'no-cache' } });
    return route.fulfill({ status: 200, contentType: 'application/json', headers: { etag, 'cache-control': 'no-cache' }, body: JSON.stringify(phase ? after : before) });
  });
  const revalidated = live.page.waitForResponse((r) => r.url().endsWith('/api/v1/upstreams') && r.status() === 304, { timeout: 15_000 });
  await live.page.goto(`${base}?poll=1000#/gateway`);
  await waitReady(live.page, '#/gateway');
  const bar = () => live.page.$eval('section.routing tr[data-provider="replica-b"] .bar', (el) => parseFloat(el.style.width));
  assert((await bar()) === 50, `replica-b's bar before: ${await bar()}`);
  await revalidated.catch(() => {
    throw new Error('no 304 for /api/v1/upstreams: the page does not revalidate it with its ETag');
  });
  await live.page.evaluate(() => (window.__sameDocument = true));
  phase = 1;
  await live.page.waitForFunction(() => document.querySelector('section.routing tr[data-provider="replica-b"] .bar')?.style.width === '4%', null, { timeout: 15_000 });
  const shown = await live.page.evaluate(() => {
    const tr = document.querySelector('section.routing tr[data-provider="replica-b"]');
    return { same: window.__sameDocument === true, share: tr?.querySelector('[data-col=share]')?.textContent, ttft: tr?.querySelector('[data-col=ttft]')?.textContent, other: document.querySelector('section.routing tr[data-provider="replica-a"] .bar')?.style.width };
  });
  assert(shown.same && shown.share === '4.00%' && shown.ttft === '1,900' && shown.other === '96%', `after the shift: ${JSON.stringify(shown)}`);
  expectNoConsoleErrors(live.record);
  await live.page.close();

  // A server without a gateway has no /api/v1/upstreams: the section says so, the page stands.
  const none = await newPage(context);
  await none.page.route('**/api/v1/upstreams', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"message":"no route","type":"invalid_request_error","param":null,"code":null}}' }));
  await none.page.goto(`${base}?poll=60000#/gateway`);
  await waitReady(none.page, '#/gateway');
  const text = await none.page.textContent('section.routing p.muted');
  assert(text === 'Not available from this server.', `without the endpoint the section reads '${text}'`);
  expectNoConsoleErrors(none.record, [/status of 404/]);
  await none.page.close();
  return note;
}

// ------------------------------------------------------------------ issue 31: status, compare, map, export, embed

const kStateWords = { green: 'Normal', amber: 'Degraded', red: 'Disrupted', none: 'No data' };

/** What the test expects the strip's summary to say, from the API's buckets. */
function expectedSummary(buckets, window) {
  const count = (s) => buckets.filter((b) => b.state === s).length;
  const hours = (n, word) => `${n} ${word}${word ? ' ' : ''}${n === 1 ? 'hour' : 'hours'}`;
  const parts = [];
  if (count('red')) parts.push(hours(count('red'), 'red'));
  if (count('amber')) parts.push(hours(count('amber'), 'amber'));
  if (count('green')) parts.push(hours(count('green'), 'green'));
  if (count('none')) parts.push(`${hours(count('none'), '')} without enough data`);
  return `${parts.join(', ') || 'no hours'} in ${window === '7d' ? 'the last 7 days' : 'the last 24 h'}`;
}

function statusDom() {
  return Array.from(document.querySelectorAll('#status > tbody > tr')).map((tr) => ({
    provider: tr.dataset.provider,
    model: tr.dataset.model,
    state: tr.dataset.state,
    word: tr.querySelector('[data-col=state] .state')?.textContent ?? '',
    incidentLink: tr.querySelector('.incident-link')?.textContent ?? null,
    stripLabel: tr.querySelector('.strip')?.getAttribute('aria-label') ?? '',
    stripRole: tr.querySelector('.strip')?.getAttribute('role') ?? '',
    summary: tr.querySelector('[data-summary]')?.textContent ?? '',
    // The tooltip is written when the pointer reaches a segment, as a mouse user's would.
    segs: Array.from(tr.querySelectorAll('.strip .seg')).map((s) => {
      s.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      return { t: s.dataset.t, state: s.dataset.state, samples: s.dataset.samples, title: s.getAttribute('title') ?? '' };
    }),
  }));
}

function compareStatus(window) {
  return (dom, body) => {
    const p = [];
    if (body.window !== window) p.push(`API window ${body.window}`);
    if (dom.length !== body.models.length) p.push(`rows: page ${dom.length}, API ${body.models.length}`);
    body.models.forEach((m, i) => {
      const d = dom[i];
      const id = `${m.provider}/${m.model}`;
      if (!d || d.provider !== m.provider || d.model !== m.model) return p.push(`row ${i}: page ${d?.provider}/${d?.model}, API ${id}`);
      if (d.state !== m.state || !d.word.includes(kStateWords[m.state])) p.push(`${id} state: page ${d.state} '${d.word}', API ${m.state}`);
      if ((m.open_incident === null) !== (d.incidentLink === null) || (m.open_incident !== null && !d.incidentLink.includes(`#${m.open_incident}`))) p.push(`${id} open incident: page '${d.incidentLink}', API ${m.open_incident}`);
      if (d.segs.length !== m.buckets.length) return p.push(`${id} segments: page ${d.segs.length}, API ${m.buckets.length}`);
      m.buckets.forEach((b, j) => {
        const s = d.segs[j];
        if (s.t !== b.t || s.state !== b.state || Number(s.samples) !== b.samples) p.push(`${id} segment ${j}: page ${s.t} ${s.state} n=${s.samples}, API ${b.t} ${b.state} n=${b.samples}`);
        if (!s.title.includes(fmtN(b.samples))) p.push(`${id} segment ${j}: title without n: '${s.title}'`);
      });
      const want = expectedSummary(m.buckets, window);
      if (d.summary !== want) p.push(`${id} summary: '${d.summary}', expected '${want}'`);
      if (d.stripRole !== 'img' || !d.stripLabel.includes(want)) p.push(`${id} strip text alternative: role ${d.stripRole}, '${d.stripLabel}'`);
    });
    return p;
  };
}

async function checkStatus(context) {
  const { page, record } = await open(context, '#/status');
  assert((await page.textContent('h1')) === 'Status', 'h1 is not Status');
  const note = await matchesApi(page, record, 'status', { window: '24h' }, statusDom, compareStatus('24h'));
  // Incidents: not cached (no ETag), so against a direct fetch: ids, order, ongoing, durations.
  // The first render does not wait for them.
  await page.waitForSelector('section.incidents :is(#incidents, .empty, [data-incidents=disabled])');
  const incRes = await fetch(apiUrl('incidents'));
  if (incRes.status === 404) {
    // A server without `[incidents]` (the demo may run without): the page must say so.
    const text = await page.textContent('[data-incidents=disabled]');
    assert(/not enabled/.test(text ?? ''), `incidents 404, the section reads '${text}'`);
    expectNoConsoleErrors(record, [/status of 404/]);
    await page.close();
    return `${note} (incidents disabled on this server)`;
  }
  const inc = await incRes.json();
  const rows = await page.$$eval('#incidents tbody tr', (trs) => trs.map((tr) => ({ id: Number(tr.dataset.id), state: tr.dataset.state, end: tr.querySelector('[data-col=end]')?.textContent, duration: Number(tr.querySelector('[data-col=duration]')?.dataset.value), size: tr.querySelector('[data-col=size]')?.textContent, regions: tr.querySelector('[data-col=regions]')?.textContent })));
  assert(rows.length === inc.incidents.length, `incidents: page ${rows.length}, API ${inc.incidents.length}`);
  inc.incidents.forEach((x, i) => {
    const r = rows[i];
    assert(r.id === x.id && r.state === x.state, `incident ${i}: page #${r.id} ${r.state}, API #${x.id} ${x.state}`);
    assert(x.end === null ? r.end === 'ongoing' : r.end !== 'ongoing', `incident #${x.id} end '${r.end}', API ${x.end}`);
    assert(r.duration === x.duration_s, `incident #${x.id} duration ${r.duration}, API ${x.duration_s}`);
    if (x.size.metric && x.size.ratio !== null) assert(r.size.includes(`${x.size.ratio.toFixed(1)}x baseline`), `incident #${x.id} size '${r.size}'`);
    for (const c of x.cells) assert(r.regions.includes(c.upstream_region), `incident #${x.id} regions '${r.regions}' lack ${c.upstream_region}`);
  });
  // The hourly data table behind the first strip, built when opened from the keyboard.
  // By selector, not an element handle: a poll's re-render may replace the row in between.
  await page.focus('#status > tbody > tr details > summary');
  await page.keyboard.press('Enter');
  const hourRows = await page.waitForFunction(() => document.querySelector('#status > tbody > tr details[open] table')?.querySelectorAll(':scope > tbody > tr').length ?? 0);
  const wantRows = (await api('status', { window: '24h' })).body.models[0].buckets.length;
  assert((await hourRows.jsonValue()) === wantRows, `hourly table: ${await hourRows.jsonValue()} rows, the API ${wantRows} buckets`);
  const openFirst = rows.findIndex((r) => r.state !== 'open');
  assert(openFirst < 0 || rows.slice(openFirst).every((r) => r.state !== 'open'), 'open incidents are not first');
  // 7 days from the keyboard: the period buttons.
  await page.focus('[data-window="7d"]');
  await page.keyboard.press('Enter');
  await waitReady(page, '#/status?window=7d');
  await matchesApi(page, record, 'status', { window: '7d' }, statusDom, compareStatus('7d'));
  const focused = await page.evaluate(() => document.activeElement?.dataset.window);
  assert(focused === '7d', `focus after choosing 7 days: ${focused}`);
  expectNoConsoleErrors(record);
  await page.close();

  // A server without incident detection: /incidents is a 404 and the page says so plainly.
  const none = await newPage(context);
  await none.page.route('**/api/v1/incidents*', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"message":"no route","type":"invalid_request_error","param":null,"code":null}}' }));
  await none.page.goto(`${base}?poll=60000#/status`);
  await waitReady(none.page, '#/status');
  const text = await none.page.textContent('[data-incidents=disabled]');
  assert(/not enabled/.test(text ?? ''), `without incidents the section reads '${text}'`);
  assert((await none.page.$$('#status > tbody > tr')).length > 0, 'the status rows vanished without incidents');
  expectNoConsoleErrors(none.record, [/status of 404/]);
  await none.page.close();
  return `${note} (${inc.incidents.length} incidents, ${inc.open} open)`;
}

const pairs = (o) => Object.entries(o).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]));

async function checkCompare(context) {
  const lb = (await api('leaderboard', { window: '7d' })).body;
  const ok = lb.rows.filter((r) => !r.insufficient && r.ttft_ms?.p50 && r.provider !== kXssProvider);
  assert(ok.length >= 2, 'fewer than two models with enough samples in 7d');
  const [a, b] = [ok[0], ok[ok.length - 1]];
  const models = [a, b].map((r) => `${r.provider}/${r.model}`).join(',');
  const { page, record } = await open(context, `#/compare?models=${encodeURIComponent(models)}`);
  // The sentence: the slower model's p50 over the faster one's, from the leaderboard answer shown.
  const note = await matchesApi(
    page, record, 'leaderboard', { window: '7d' },
    () => Array.from(document.querySelectorAll('#verdict [data-sentence]')).map((p) => ({ key: p.dataset.sentence, text: p.textContent })),
    (dom, body) => {
      const ra = body.rows.find((r) => r.provider === a.provider && r.model === a.model);
      const rb = body.rows.find((r) => r.provider === b.provider && r.model === b.model);
      const [fast, slow] = ra.ttft_ms.p50 <= rb.ttft_ms.p50 ? [ra, rb] : [rb, ra];
      const ratio = slow.ttft_ms.p50 / fast.ttft_ms.p50;
      const s = dom.find((x) => x.key === `ratio:TTFT:${slow.provider}/${slow.model}`);
      if (!s) return [`no TTFT sentence for ${slow.model}: ${JSON.stringify(dom)}`];
      const want = ratio < 1.05 ? 'within 5% of' : `is ${ratio.toFixed(1)}x ${fast.model}'s`;
      const p = [];
      if (!s.text.includes(want)) p.push(`sentence '${s.text}' lacks '${want}'`);
      if (!s.text.includes(fmtN(slow.samples)) || !s.text.includes('7d, all regions')) p.push(`sentence '${s.text}' lacks n or scope`);
      return p;
    },
  );
  const sel = { window: '7d', provider: [a.provider, b.provider], model: [a.model, b.model] };
  for (const metric of ['ttft', 'tpot']) {
    await matchesApi(
      page, record, 'distribution', pairs({ ...sel, metric }),
      [(key) => { const el = document.querySelector(`[data-chart="${key}"]`); return el ? { series: Number(el.dataset.series), points: el.dataset.points, drawn: !!el.querySelector('canvas') } : null; }, `${metric}-cdf`],
      (dom, body) => {
        const want = [a, b].map((r) => body.series.find((s) => s.provider === r.provider && s.model === r.model)).filter((s) => s && !s.insufficient);
        if (!dom) return [`no ${metric} chart`];
        return dom.series === want.length && dom.points === want.map((s) => s.cdf.length).join(',') && dom.drawn ? [] : [`${metric}: page ${dom.series} series ${dom.points}, API ${want.length} ${want.map((s) => s.cdf.length)}`];
      },
    );
  }
  // Hour of day: one line per model with a point for every hour that has enough samples, and
  // the "largest gap" sentence names the hour of the largest ratio.
  await matchesApi(
    page, record, 'heatmap', pairs({ ...sel, by: 'model', metric: 'ttft', q: '0.5', tz: 'UTC' }),
    () => ({ points: document.querySelector('[data-chart="ttft-hours"]')?.dataset.points, hours: document.querySelector('[data-sentence^="hours:"]')?.textContent ?? null }),
    (dom, body) => {
      const vals = (r) => { const v = new Array(24).fill(null); for (const c of body.cells) if (c.provider === r.provider && c.model === r.model && !c.insufficient && c.value > 0) v[c.hour] = c.value; return v; };
      const [va, vb] = [vals(a), vals(b)];
      const p = [];
      const want = [va, vb].map((v) => v.filter((x) => x !== null).length).join(',');
      if (dom.points !== want) p.push(`hour chart points: page ${dom.points}, API ${want}`);
      const slowIsA = a.ttft_ms.p50 > b.ttft_ms.p50;
      const ratios = va.map((x, i) => (x !== null && vb[i] !== null ? (slowIsA ? x / vb[i] : vb[i] / x) : null));
      const n = ratios.filter((r) => r !== null).length;
      if (n >= 12) {
        const max = Math.max(...ratios.filter((r) => r !== null));
        const hr = ratios.indexOf(max);
        if (max >= 1.05 && !(dom.hours ?? '').includes(`${max.toFixed(1)}x`)) p.push(`gap sentence '${dom.hours}' lacks the largest ratio ${max.toFixed(1)}x (hour ${hr})`);
        if (max >= 1.05) {
          const m = /at (\d\d):00–(\d\d):00 UTC/.exec(dom.hours ?? '');
          if (!m || !(Number(m[1]) <= hr && (hr < Number(m[2]) || Number(m[2]) === 0))) p.push(`gap sentence '${dom.hours}' does not cover hour ${hr}`);
        }
      } else if (dom.hours) p.push(`gap sentence from only ${n} comparable hours`);
      return p;
    },
  );
  // Picking a third model from the keyboard: Space on its checkbox.
  const third = ok.find((r) => r !== a && r !== b);
  if (third) {
    const key = `pick:${third.provider}/${third.model}`;
    await page.focus(`[data-key="${key}"]`);
    await page.keyboard.press('Space');
    await page.waitForFunction((m) => decodeURIComponent(location.hash).includes(m), `${third.provider}/${third.model}`);
    await waitReady(page, '#/compare');
    const focused = await page.evaluate(() => document.activeElement?.dataset.key);
    assert(focused === key, `focus after picking: ${focused}`);
    assert((await page.getAttribute('[data-chart="ttft-cdf"]', 'data-series')) === '3', 'the third model is not on the TTFT CDF');
  }
  expectNoConsoleErrors(record);
  await page.close();
  // Insufficient data gives no sentence, it says why.
  const thin = lb.rows.find((r) => r.insufficient && r.provider !== kXssProvider);
  if (thin) {
    const t = await open(context, `#/compare?models=${encodeURIComponent(`${a.provider}/${a.model},${thin.provider}/${thin.model}`)}`);
    const sentences = await t.page.$$eval('#verdict [data-sentence]', (ps) => ps.map((p) => ({ key: p.dataset.sentence, text: p.textContent })));
    assert(!sentences.some((s) => s.key.startsWith('ratio:') || s.key.startsWith('hours:')), `a comparison with an insufficient model: ${JSON.stringify(sentences)}`);
    assert(sentences.some((s) => /insufficient data \(n=\d+, needs \d+\)/.test(s.text)), `no insufficient-data sentence: ${JSON.stringify(sentences)}`);
    expectNoConsoleErrors(t.record);
    await t.page.close();
  }
  return `${note} (${a.model} vs ${b.model}${third ? `, then ${third.model}` : ''})`;
}

async function checkRegionsMap(context) {
  const { page, record } = await open(context, '#/regions');
  const mapDom = () => {
    const fig = document.querySelector('[data-figure=map]');
    const svg = fig?.querySelector('svg.world-map');
    return {
      model: fig?.dataset.model, metric: fig?.dataset.metric, by: fig?.dataset.by, other: fig?.dataset.other,
      describedBy: svg?.getAttribute('aria-describedby'), label: svg?.getAttribute('aria-label') ?? '',
      placed: Array.from(svg?.querySelectorAll('[data-region]') ?? []).map((el) => ({ region: el.dataset.region, title: el.querySelector('title')?.textContent ?? '', point: el.tagName === 'g' })),
      unplaced: fig?.querySelector('[data-unplaced]')?.dataset.unplaced ?? '',
      legend: fig?.querySelector('.map-legend')?.textContent ?? '',
    };
  };
  const compareMap = (dom, body) => {
    const p = [];
    const [provider, model] = JSON.parse(dom.model);
    const metric = { ttft_p50: (r) => r.ttft_ms?.p50, ttft_p95: (r) => r.ttft_ms?.p95, e2e_p50: (r) => r.e2e_ms?.p50 }[dom.metric];
    const here = (r) => (dom.by === 'client' ? r.client_region : r.upstream_region);
    const other = (r) => (dom.by === 'client' ? r.upstream_region : r.client_region);
    const rows = body.rows.filter((r) => r.provider === provider && r.model === model && other(r) === dom.other);
    if (rows.length === 0) p.push('the map shows no API row');
    const unplaced = dom.unplaced ? dom.unplaced.split(',') : [];
    for (const r of rows) {
      const label = here(r) || '(unknown)';
      const el = dom.placed.find((x) => x.region === label);
      if (!el) {
        if (!unplaced.includes(label)) p.push(`${label}: neither on the map nor listed as not on it`);
        continue;
      }
      if (!el.title.includes(fmtN(r.samples))) p.push(`${label}: title '${el.title}' lacks ${fmtN(r.samples)}`);
      const v = metric(r);
      if (!r.insufficient && v !== null) {
        const m = /([\d,.]+) ms/.exec(el.title);
        if (!m || !shows(m[1], v)) p.push(`${label}: title '${el.title}', API ${v}`);
      } else if (!/insufficient|no value/.test(el.title)) p.push(`${label}: insufficient row titled '${el.title}'`);
      // ISO country codes are filled countries; cloud names circles.
      if (/^[A-Z]{2}$/.test(label) && !['EU', 'OC', 'AN'].includes(label) && el.point) p.push(`${label}: a country drawn as a point`);
    }
    if (dom.placed.length + unplaced.length !== rows.length) p.push(`map items ${dom.placed.length} + ${unplaced.length} unplaced, API rows ${rows.length}`);
    if (dom.describedBy !== 'regions') p.push(`aria-describedby '${dom.describedBy}'`);
    if (!/ms/.test(dom.legend)) p.push(`legend without a scale: '${dom.legend}'`);
    return p;
  };
  const note = await matchesApi(page, record, 'regions', { window: '24h' }, mapDom, compareMap);
  assert(await page.$('#regions'), 'the table the map is described by is missing');
  // Another metric and the other side: the map follows, from the keyboard-reachable selects.
  await page.selectOption('#f-map_metric', 'e2e_p50');
  await page.waitForFunction(() => document.querySelector('[data-figure=map]')?.dataset.metric === 'e2e_p50');
  await waitReady(page, '#/regions');
  await matchesApi(page, record, 'regions', { window: '24h' }, mapDom, compareMap);
  await page.selectOption('#f-map_by', 'upstream');
  await page.waitForFunction(() => document.querySelector('[data-figure=map]')?.dataset.by === 'upstream');
  await waitReady(page, '#/regions');
  await matchesApi(page, record, 'regions', { window: '24h' }, mapDom, compareMap);
  expectNoConsoleErrors(record);
  await page.close();
  const dom = await (async () => { const o = await open(context, '#/regions'); const d = await o.page.evaluate(mapDom); await o.page.close(); return d; })();
  return `${note} (${dom.placed.length} placed, not on the map: ${dom.unplaced || 'none'})`;
}

/** Every view's CSV and JSON links: the JSON one is a URL the page fetched, the CSV one the
 *  same with format=csv, both downloads, and the CSV is RFC 4180 text/csv. */
async function checkExports(context) {
  const lb = (await api('leaderboard', { window: '24h' })).body;
  const row = lb.rows.find((r) => !r.insufficient && r.provider !== kXssProvider);
  const views = ['#/status', '#/leaderboard?task=chat', `#/model/${encodeURIComponent(row.provider)}/${encodeURIComponent(row.model)}`, '#/compare', '#/time-of-day', '#/regions?window=7d', '#/gateway'];
  let links = 0;
  for (const hash of views) {
    const { page, record } = await open(context, hash, 60_000);
    // The status page's incidents (and their links) arrive in a second render.
    if (hash === '#/status') await page.waitForSelector('section.incidents :is(#incidents, .empty, [data-incidents=disabled])');
    const found = await page.$$eval('[data-export] a', (as) => as.map((a) => ({ href: a.href, format: a.dataset.format, download: a.getAttribute('download') })));
    assert(found.length >= 2, `${hash}: no export links`);
    const json = found.filter((f) => f.format === 'json');
    const csv = found.filter((f) => f.format === 'csv');
    assert(json.length === csv.length, `${hash}: ${json.length} JSON and ${csv.length} CSV links`);
    for (let i = 0; i < json.length; i++) {
      const j = new URL(json[i].href);
      const c = new URL(csv[i].href);
      assert(record.requests.includes(j.toString()), `${hash}: the JSON link ${j} is not a URL the page fetched`);
      assert(c.searchParams.get('format') === 'csv', `${hash}: CSV link without format=csv: ${c}`);
      c.searchParams.delete('format');
      assert(c.pathname === j.pathname && [...c.searchParams].sort().join('&') === [...j.searchParams].sort().join('&'), `${hash}: the CSV link has other filters than the JSON one: ${csv[i].href} vs ${json[i].href}`);
      assert(json[i].download?.endsWith('.json') && csv[i].download?.endsWith('.csv'), `${hash}: download names ${json[i].download}, ${csv[i].download}`);
      const res = await fetch(csv[i].href);
      const text = await res.text();
      assert(res.ok && /^text\/csv/.test(res.headers.get('content-type') ?? ''), `${csv[i].href}: ${res.status} ${res.headers.get('content-type')}`);
      assert(text.includes('\r\n') && text.split('\r\n')[0].includes(','), `${csv[i].href}: not CSV: ${text.slice(0, 80)}`);
      links += 2;
    }
    expectNoConsoleErrors(record);
    await page.close();
  }
  return `(${links} links on ${views.length} views)`;
}

async function checkEmbed(context) {
  const lb = (await api('leaderboard', { window: '24h' })).body;
  const row = lb.rows.find((r) => !r.insufficient && r.provider !== kXssProvider);
  const { page, record } = await open(context, `#/model/${encodeURIComponent(row.provider)}/${encodeURIComponent(row.model)}`);
  // Closed until asked for (no badge request on every model page): open it from the keyboard.
  assert(!(await page.$('img[data-badge]')), 'the badge loads before the Embed section is opened');
  await page.focus('details.embed > summary');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => { const img = document.querySelector('img[data-badge]'); return img && img.complete; });
  const img = await page.$eval('img[data-badge]', (el) => ({ src: el.src, w: el.naturalWidth, alt: el.alt }));
  const origin = new URL(base).origin;
  const want = `${new URL(base).toString()}badge/${encodeURIComponent(row.provider)}/${encodeURIComponent(row.model)}/ttft_p50.svg`;
  assert(img.src === want && img.w > 0 && img.alt, `badge image ${JSON.stringify(img)}, expected ${want}`);
  const md = await page.inputValue('#embed-markdown');
  assert(md.startsWith('![') && md.endsWith(`](${want})`) && want.startsWith(origin), `markdown '${md}'`);
  const res = await fetch(want);
  assert(res.ok && /svg/.test(res.headers.get('content-type') ?? ''), `GET ${want}: ${res.status} ${res.headers.get('content-type')}`);
  await page.focus('[data-key="embed:copy"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-copy-status]')?.textContent !== '');
  const selected = await page.evaluate(() => { const el = document.getElementById('embed-markdown'); return el.selectionEnd - el.selectionStart; });
  assert(selected === md.length, `the snippet is not selected after Copy (${selected} of ${md.length})`);
  // Another badge: the snippet follows.
  await page.focus('#f-badge');
  await page.selectOption('#f-badge', 'error_rate');
  await page.waitForFunction(() => document.getElementById('embed-markdown')?.value.endsWith('/error_rate.svg)'));
  await waitReady(page, '#/model/');
  const focused = await page.evaluate(() => document.activeElement?.id);
  assert(focused === 'f-badge', `focus after choosing a badge: ${focused}`);
  expectNoConsoleErrors(record);
  await page.close();
  return `(${md})`;
}

async function checkXssAndLive(context) {
  // Open first, then submit: the new row must arrive through polling, without a reload.
  const { page, record } = await open(context, '#/leaderboard?window=1h');
  // A keyboard user sits on a sort button while the data changes under them.
  const sortKey = 'sort:leaderboard:ttft_p50';
  await page.focus(`[data-key="${sortKey}"]`);
  const res = await fetch(apiUrl('measurements'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(xssRecords(25, kXssProvider, kXss)),
  });
  const answer = await res.text();
  assert(res.ok, `POST /api/v1/measurements: ${res.status} ${answer}`);
  assert(JSON.parse(answer).accepted === 25, `POST /api/v1/measurements: ${answer}`);
  const cell = `#leaderboard tbody tr[data-provider="${kXssProvider}"] [data-col=model]`;
  await page.waitForSelector(cell, { timeout: 60_000 });
  const text = await page.textContent(`${cell} a`);
  assert(text === kXss, `model cell reads '${text}', expected the literal '${kXss}'`);
  assert((await page.$$('main img')).length === 0, 'an <img> element appeared in the page');
  const focusedKey = await page.evaluate(() => document.activeElement?.getAttribute('data-key'));
  assert(focusedKey === sortKey, `focus after the live re-render: '${focusedKey}', expected the sort button`);
  // Live: the page polled (304s for unchanged resources) and says how fresh it is. A churning
  // mock changes every resource between polls: nothing is unchanged, so no 304 is due.
  if (!churning) {
    await page.waitForResponse((r) => r.url().includes('/api/v1/') && r.status() === 304, { timeout: 15_000 }).catch(() => {
      throw new Error(`no 304 among the page's API responses (${[...new Set(record.responses.map((r) => r.status))]}): ETag revalidation not used`);
    });
  }
  const updated = await page.textContent('#updated');
  assert(/^updated \d+ s ago$/.test(updated ?? ''), `status reads '${updated}'`);
  // The model page and the time-of-day model list show it as text too.
  await page.click(`${cell} a`);
  await waitReady(page, '#/model/');
  assert((await page.textContent('h1 .model-name')) === kXss, 'model page title is not the literal label');
  await page.goto(`${base}?poll=1000#/time-of-day?window=1h`);
  await waitReady(page, '#/time-of-day');
  const options = await page.$$eval('#f-model option', (os) => os.map((o) => o.textContent));
  assert(options.includes(`${kXss} (${kXssProvider})`), `model select lacks the literal label: ${options.join(', ')}`);
  const rows = await page.$$eval('#heatmap tbody th', (ths) => ths.map((t) => t.textContent));
  assert(rows.some((r) => r === `${kXss} (${kXssProvider})`), `heatmap rows lack the literal label: ${rows.join(', ')}`);
  assert((await page.$$('main img')).length === 0, 'an <img> element appeared in the page');
  assert(!record.requests.some((u) => /\/x(\?|$)/.test(u)), 'the browser requested "x": the <img> was parsed');
  expectNoConsoleErrors(record);
  await page.close();
}

async function checkKeyboard(context) {
  const { page, record } = await open(context, '#/leaderboard');
  const seen = new Set();
  const want = ['status', 'leaderboard', 'compare', 'time-of-day', 'regions', 'gateway'];
  // From a fresh load Tab goes forward into the header; after a navigation focus is on the new
  // page's heading and the navigation is behind it: Shift+Tab.
  let key = 'Tab';
  for (let presses = 0; presses < 80 && seen.size < want.length; presses++) {
    await page.keyboard.press(key);
    const target = await page.evaluate(() => {
      const a = document.activeElement;
      return a instanceof HTMLAnchorElement ? a.dataset.page ?? null : null;
    });
    if (target && !seen.has(target)) {
      seen.add(target);
      const from = new URL(page.url()).hash;
      await page.keyboard.press('Enter');
      await waitReady(page, `#/${target}`);
      if (!from.startsWith(`#/${target}`)) {
        const focused = await page.evaluate(() => document.activeElement?.tagName);
        assert(focused === 'H1', `focus after navigating to ${target} is on ${focused}, not the heading`);
        key = 'Shift+Tab';
      }
    }
  }
  assert(seen.size === want.length, `keyboard reached ${[...seen].join(', ')} only`);
  // The model page: Tab to a model link on the leaderboard and press Enter.
  await page.goto(`${base}?poll=1000#/leaderboard`);
  await waitReady(page, '#/leaderboard');
  let reached = false;
  for (let presses = 0; presses < 40 && !reached; presses++) {
    await page.keyboard.press('Tab');
    const href = await page.evaluate(() => (document.activeElement instanceof HTMLAnchorElement ? document.activeElement.getAttribute('href') : null));
    if (href?.startsWith('#/model/')) {
      await page.keyboard.press('Enter');
      await waitReady(page, '#/model/');
      reached = true;
    }
  }
  assert(reached, 'no model link reachable with Tab');
  // After navigating, focus is on the new page's heading.
  const focused = await page.evaluate(() => document.activeElement?.tagName);
  assert(focused === 'H1', `focus after navigation is on ${focused}, not the heading`);
  // The theme toggle works from the keyboard.
  const before = await page.getAttribute('html', 'data-theme');
  await page.focus('#theme-toggle');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  const after = await page.getAttribute('html', 'data-theme');
  assert(before !== after, `theme stayed ${before} after toggling to light then dark`);
  // Visible focus: the focused control has an outline.
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert(outline !== 'none', 'focused control shows no outline');
  expectNoConsoleErrors(record);
  await page.close();
  return `(${[...seen].join(', ')}, model)`;
}

async function checkBadFilter(context) {
  const { page, record } = await newPage(context);
  await page.goto(`${base}#/leaderboard?window=nope`);
  await page.waitForFunction(() => document.querySelector('main')?.dataset.state === 'error');
  const text = await page.textContent('main [role=alert]');
  assert(/window/.test(text ?? ''), `error does not name the parameter: '${text}'`);
  expectNoConsoleErrors(record, [/status of 400/]);
  await page.close();
}

async function luminance(page) {
  return page.evaluate(() => {
    const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(getComputedStyle(document.body).backgroundColor);
    if (!m) return -1;
    const [r, g, b] = m.slice(1).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  });
}

async function screenshots(browser) {
  const lb = (await api('leaderboard', { window: '24h' })).body;
  const row = lb.rows.find((r) => !r.insufficient && r.provider !== kXssProvider) ?? lb.rows[0];
  const modelHash = `#/model/${encodeURIComponent(row.provider)}/${encodeURIComponent(row.model)}`;
  const tod = `#/time-of-day?provider=${encodeURIComponent(row.provider)}&model=${encodeURIComponent(row.model)}`;
  const shots = [
    ['leaderboard', '#/leaderboard'],
    ['model', modelHash],
    ['time-of-day', tod],
    ['time-of-day-all', '#/time-of-day'],
    ['regions', '#/regions'],
    ['gateway', '#/gateway'],
    ['status', '#/status'],
    ['status-7d', '#/status?window=7d'],
    ['compare', '#/compare'],
  ];
  const files = [];
  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({ colorScheme: scheme, locale: 'en-US', timezoneId: kTimeZone, viewport: { width: 1280, height: 900 } });
    for (const [name, hash] of shots) {
      const { page, record } = await open(context, hash, 60_000);
      await page.waitForTimeout(300); // charts draw after layout
      const theme = await page.getAttribute('html', 'data-theme');
      assert(theme === scheme, `${name}: data-theme ${theme} under prefers-color-scheme ${scheme}`);
      const lum = await luminance(page);
      assert(scheme === 'dark' ? lum < 0.2 : lum > 0.8, `${name} ${scheme}: background luminance ${lum.toFixed(2)}`);
      const file = path.join(outDir, `${name}-${scheme}.png`);
      await page.screenshot({ path: file, fullPage: true });
      files.push(file);
      expectNoConsoleErrors(record);
      await page.close();
    }
    await context.close();
  }
  // Responsive: a phone-sized viewport keeps the page within its width (tables scroll inside).
  const phone = await browser.newContext({ locale: 'en-US', timezoneId: kTimeZone, viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
  for (const [name, hash] of [shots[0], shots[1], shots[2], ...shots.filter(([n]) => n === 'status' || n === 'regions' || n === 'compare')]) {
    const { page } = await open(phone, hash, 60_000);
    await page.waitForTimeout(300);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert(overflow <= 1, `${name} on a phone: the page is ${overflow}px wider than the screen`);
    const file = path.join(outDir, `${name}-phone.png`);
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
    await page.close();
  }
  await phone.close();
  return `(${files.length} in ${rel(outDir)})`;
}

async function measureFirstLoad(browser, hash, rowSelector, target, name) {
  const runs = [];
  // Best of up to five: this shared VM's load makes single runs noisy; three when within target.
  for (let i = 0; i < 5 && (i < 3 || Math.min(...runs.map((r) => r.first_table_ms)) >= target); i++) {
    // A fresh context each time: no HTTP cache, no service worker, a true first load.
    const context = await browser.newContext({ locale: 'en-US', timezoneId: kTimeZone });
    const page = await context.newPage();
    await page.goto(`${base}${hash}`, { waitUntil: 'load' });
    await page.waitForFunction(() => performance.getEntriesByName('tokenradar:first-render').length > 0);
    runs.push(
      await page.evaluate((sel) => {
        const nav = performance.getEntriesByType('navigation')[0];
        const mark = performance.getEntriesByName('tokenradar:first-render')[0];
        return { load_ms: Math.round(nav.loadEventEnd), first_table_ms: Math.round(mark.startTime), rows: document.querySelectorAll(sel).length };
      }, rowSelector),
    );
    await context.close();
  }
  const best = runs.reduce((a, b) => (b.first_table_ms < a.first_table_ms ? b : a));
  const met = best.first_table_ms < target;
  fs.writeFileSync(path.join(outDir, `${name}.json`), `${JSON.stringify({ hash, target_ms: target, met, runs, best }, null, 2)}\n`);
  assert(best.rows > 0, `first load of ${hash} rendered an empty table`);
  assert(best.first_table_ms < kFirstLoadFailMs, `first table after ${best.first_table_ms} ms (fails over ${kFirstLoadFailMs} ms): ${JSON.stringify(runs)}`);
  return `(load event ${best.load_ms} ms, first table ${best.first_table_ms} ms, target ${target} ms ${met ? 'met' : 'NOT met'}; best of ${runs.length})`;
}

function checkJsSize() {
  const assets = path.join(dist, 'assets');
  const js = fs.readdirSync(assets).filter((f) => f.endsWith('.js'));
  assert(js.length > 0, `no JavaScript in ${assets}`);
  let raw = 0;
  let gz = 0;
  for (const f of js) {
    const buf = fs.readFileSync(path.join(assets, f));
    raw += buf.length;
    gz += zlib.gzipSync(buf, { level: 9 }).length;
  }
  fs.writeFileSync(path.join(outDir, 'js-size.json'), `${JSON.stringify({ files: js, raw_bytes: raw, gzip_bytes: gz }, null, 2)}\n`);
  assert(gz < kJsBudgetBytes, `JavaScript is ${gz} bytes gzipped (budget ${kJsBudgetBytes})`);
  return `(${(gz / 1024).toFixed(1)} KiB gzipped, ${(raw / 1024).toFixed(1)} KiB raw)`;
}

// ------------------------------------------------------------------ main

async function waitForData(timeoutMs = 120_000) {
  const t0 = Date.now();
  let last = null;
  for (;;) {
    try {
      const lb = (await api('leaderboard', { window: '24h' })).body;
      if (lb.rows.some((r) => !r.insufficient)) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() - t0 > timeoutMs) throw new Error(`no model with enough samples after ${timeoutMs} ms (${last ?? 'none'})`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function main() {
  if (!fs.existsSync(path.join(dist, 'index.html'))) throw new Error(`${rel(dist)}/index.html missing: run \`make web\``);
  let server = null;
  if (givenUrl) {
    base = new URL(givenUrl).toString();
  } else if (serverKind === 'mock') {
    server = await startServer(process.execPath, [path.join(here, 'mock-server.mjs'), '--port', '0', '--dist', dist, '--churn-ms', churnMs]);
  } else if (serverKind === 'demo') {
    if (!fs.existsSync(binary)) throw new Error(`${binary} not found: build it (make build) or pass --binary`);
    server = await startServer(binary, ['demo', '--port', '0', '--history', '2d']);
  } else {
    throw new Error(`--server: expected demo or mock, got '${serverKind}'`);
  }
  if (server) base = server.url;
  log(`dashboard under test: ${base} (${givenUrl ? 'given' : serverKind}); output in ${rel(outDir)}`);
  const results = new Results(only);
  let browser = null;
  try {
    await waitForData();
    browser = await launchBrowser();
    const context = await browser.newContext({ locale: 'en-US', timezoneId: kTimeZone, viewport: { width: 1280, height: 900 } });
    await results.run('JavaScript under 300 KB gzipped', async () => checkJsSize());
    await results.run('leaderboard first load (target 1 s)', () => measureFirstLoad(browser, '#/leaderboard', '#leaderboard tbody tr', 1000, 'first-load'));
    await results.run('status first load (target 300 ms)', () => measureFirstLoad(browser, '#/status', '#status > tbody > tr', 300, 'first-load-status'));
    await results.run('leaderboard shows the API numbers', () => checkLeaderboard(context));
    await results.run('leaderboard filters change the query and the table', () => checkFilters(context));
    await results.run('model detail: stats, CDFs, time series', () => checkModel(context));
    await results.run('time of day heatmap in the viewer time zone', () => checkTimeOfDay(context));
    await results.run('regions table', () => checkRegions(context));
    await results.run('gateway figures', () => checkGateway(context));
    await results.run('gateway response cache: hit rate, time saved, similarity', () => checkGatewayCache(context));
    await results.run('gateway routing: shares, estimates, breakers, live shift', () => checkGatewayRouting(context));
    await results.run('status page: states, hourly strips, incidents, no-incidents server', () => checkStatus(context));
    await results.run('compare: CDFs, hour of day, the difference in words', () => checkCompare(context));
    await results.run('regions map: places, colours, text alternative', () => checkRegionsMap(context));
    await results.run('export links on every view: CSV and JSON of the API URLs shown', () => checkExports(context));
    await results.run('model page embed: badge and Markdown snippet', () => checkEmbed(context));
    await results.run('bad filter shows the API error', () => checkBadFilter(context));
    await results.run('keyboard reaches every page', () => checkKeyboard(context));
    await results.run('screenshots light, dark, phone', () => screenshots(browser));
    // Last: it adds a model to the data set the other checks compare.
    await results.run('HTML label renders inert; live update without reload', () => checkXssAndLive(context));
  } finally {
    await browser?.close();
    if (server) {
      const code = await stopServer(server.child);
      if (code !== 0) log(`note: server exited with ${code}; its stderr ends:\n${server.stderr().slice(-2000)}`);
    }
  }
  const failed = results.failed;
  log(`${results.list.length - failed.length} passed, ${failed.length} failed`);
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((err) => {
  log(`error: ${err?.stack ?? err}`);
  process.exitCode = 1;
});
