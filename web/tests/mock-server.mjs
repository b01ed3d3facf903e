#!/usr/bin/env node
// A stand-in for the observatory while it is being written, and a fixed data set for
// developing the dashboard: serves web/dist at / and the query API of
// docs/observatory-api.md over deterministic synthetic measurements (exact quantiles instead
// of sketches). Accepts POST /api/v1/measurements. Prints the same ready line as
// `tokenradar demo` ("dashboard: http://127.0.0.1:PORT/") so the test harness can use either.
//
//   node tests/mock-server.mjs [--port 0] [--dist web/dist] [--churn-ms 0] [--no-incidents]

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
};
const port = Number(arg('port', '0'));
const dist = path.resolve(arg('dist', path.join(here, '..', 'dist')));
const kMinSamples = 20;

// ------------------------------------------------------------------ synthetic data

let seed = 42;
function rand() {
  // mulberry32: deterministic, so screenshots and numbers repeat between runs.
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (list) => list[Math.floor(rand() * list.length)];
// Log-normal around a median.
const lognormal = (median, sigma) => median * Math.exp(sigma * Math.sqrt(-2 * Math.log(rand() || 1e-9)) * Math.cos(2 * Math.PI * rand()));

const kModels = [
  { provider: 'openai-sim', model: 'gpt-4o', ttft: 280, tpot: 1000 / 42, api: 'openai', region: 'us-east-1' },
  { provider: 'anthropic-sim', model: 'claude-3.5-sonnet', ttft: 310, tpot: 1000 / 38, api: 'anthropic', region: 'us-west-2' },
  { provider: 'gemini-sim', model: 'gemini-1.5-pro', ttft: 620, tpot: 1000 / 29, api: 'gemini', region: 'europe-west4' },
  { provider: 'together-sim', model: 'llama-3-70b', ttft: 410, tpot: 1000 / 35, api: 'openai', region: 'us-east-1' },
];
const kTasks = ['chat', 'gen-500', 'code'];
const kSources = ['bench', 'gateway', 'sim'];
// Cloud-style names, ISO country codes (what GeoIP stamps), a continent code and one label no
// map knows, so the regions map has every kind to place.
const kClientRegions = ['eu-west', 'us-east', 'ap-south', 'DE', 'JP', 'BR', 'EU', 'lunar-base'];

// The values repeat between runs (seeded); the times follow the clock so the charts look live.
const startNow = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const records = [];
let generation = 1;

function usBusinessHours(ms) {
  const d = new Date(ms);
  const hourNy = (d.getUTCHours() + 24 - 5) % 24;
  const day = d.getUTCDay();
  return day >= 1 && day <= 5 && hourNy >= 9 && hourNy < 17;
}

function addSynthetic(m, ts) {
  // together-sim is slow right now (its last two hours): the status page's open incident.
  const slow = m.provider === 'openai-sim' && usBusinessHours(ts) ? 2.2 : m.provider === 'together-sim' && ts >= startNow - 2 * hour ? 2.6 : 1;
  const client = pick(kClientRegions);
  const far = (client === 'eu-west') !== m.region.startsWith('europe');
  const ok = rand() > 0.012;
  let ttft = lognormal(m.ttft * slow * (far ? 1.25 : 1), 0.25);
  const tpot = lognormal(m.tpot, 0.12);
  const n = 50 + Math.floor(rand() * 450);
  const source = pick(kSources);
  const cacheRoll = rand();
  // A third of the gateway's attempts find their prompt prefix in the provider's cache, which
  // saves prefill. Derived from the draws above, so the other values stay as they were.
  const promptCacheHit = source === 'gateway' && Math.floor(ttft * 1000) % 3 === 0;
  if (promptCacheHit) ttft *= 0.6;
  records.push({
    ts,
    provider: m.provider,
    model: m.model,
    task: pick(kTasks),
    source,
    api: m.api,
    stream: true,
    client_region: client,
    upstream_region: m.region,
    status: ok ? 'ok' : pick(['http_429', 'timeout_first_token', 'http_500']),
    ttft_ms: ok ? ttft : null,
    tpot_ms: ok ? tpot : null,
    e2e_ms: ok ? ttft + (n - 1) * tpot : null,
    e2e500_ms: ok ? ttft + 499 * tpot : null,
    cache: source === 'gateway' ? (cacheRoll < 0.12 ? 'exact' : cacheRoll < 0.15 ? 'semantic' : 'miss') : 'bypass',
    route: source === 'gateway' && rand() < 0.03 ? 'fallback' : 'primary',
    overhead_ms: source === 'gateway' ? lognormal(0.05, 0.4) : null,
    prompt_cache_hit: promptCacheHit,
    // The gateway's client keys (two teams and requests without a key), from a draw above.
    client_key: source === 'gateway' ? ['team-a', 'team-b', ''][Math.floor(tpot * 1000) % 3] : '',
    prompt_tokens: 200,
    output_tokens: ok ? n : 0,
  });
}

const hour = 3_600_000;
for (let h = 7 * 24; h >= 1; h--) {
  for (const m of kModels) {
    const count = h <= 48 ? 30 : 25;
    for (let i = 0; i < count; i++) addSynthetic(m, startNow - h * hour + Math.floor(rand() * hour));
  }
}
// A model with too few samples for any number: it must show as insufficient data.
for (let i = 0; i < 8; i++) addSynthetic({ provider: 'tiny-sim', model: 'rare-model', ttft: 150, tpot: 12, api: 'openai', region: 'us-east-1' }, startNow - Math.floor(rand() * 20 * hour));

// --churn-ms N: one more measurement every N ms, so every answer and ETag moves on, like the
// demo's live traffic but faster than the page polls: the tests' page/API comparisons must
// hold while it runs.
const churnMs = Number(arg('churn-ms', '0'));
if (churnMs > 0) {
  let next = 0;
  setInterval(() => {
    addSynthetic(kModels[next++ % kModels.length], Date.now());
    generation++;
  }, churnMs);
}

// ------------------------------------------------------------------ queries

class BadParam extends Error {
  constructor(param, message) {
    super(message);
    this.param = param;
  }
}

const kLabels = ['provider', 'model', 'task', 'source', 'api', 'upstream_region', 'client_region', 'client_key'];
const kMetricField = { ttft: 'ttft_ms', tpot: 'tpot_ms', e2e: 'e2e_ms', e2e500: 'e2e500_ms' };

function parseWindow(s) {
  const m = /^(\d+)(m|h|d)$/.exec(s);
  if (!m) throw new BadParam('window', `window: expected a duration up to 30d, got '${s}'`);
  const ms = Number(m[1]) * { m: 60_000, h: hour, d: 24 * hour }[m[2]];
  if (ms <= 0 || ms > 30 * 24 * hour) throw new BadParam('window', `window: expected a duration up to 30d, got '${s}'`);
  return ms;
}

function filtered(q) {
  const win = q.get('window') ?? '24h';
  const from = startNow - parseWindow(win);
  const wanted = kLabels.map((k) => [k, q.getAll(k)]).filter(([, v]) => v.length > 0);
  const stream = q.get('stream');
  return {
    window: win,
    rows: records.filter(
      (r) => r.ts >= from && wanted.every(([k, v]) => v.includes(r[k])) && (stream === null || String(r.stream) === stream),
    ),
  };
}

function quantile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return Math.round(sorted[i] * 1000) / 1000;
}

function values(rows, field) {
  return rows.map((r) => r[field]).filter((v) => v !== null && v !== undefined).sort((a, b) => a - b);
}

function qs(rows, field) {
  const v = values(rows, field);
  return { p50: quantile(v, 0.5), p95: quantile(v, 0.95), p99: quantile(v, 0.99) };
}

function groupBy(rows, keys) {
  const groups = new Map();
  for (const r of rows) {
    const k = JSON.stringify(keys.map((key) => r[key]));
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  return Array.from(groups.entries()).map(([k, list]) => ({ labels: Object.fromEntries(keys.map((key, i) => [key, JSON.parse(k)[i]])), list }));
}

function cell(list) {
  const ok = list.filter((r) => r.status === 'ok');
  const errors = list.length - ok.length;
  const insufficient = ok.length < kMinSamples;
  const tpot = qs(ok, 'tpot_ms');
  const nul = { p50: null, p95: null, p99: null };
  return {
    samples: list.length,
    errors,
    error_rate: list.length ? errors / list.length : null,
    insufficient,
    ttft_ms: insufficient ? nul : qs(ok, 'ttft_ms'),
    tpot_ms: insufficient ? nul : tpot,
    decode_tps_p50: insufficient || !tpot.p50 ? null : Math.round((1000 / tpot.p50) * 1000) / 1000,
    e2e_ms: insufficient ? nul : qs(ok, 'e2e_ms'),
    e2e500_ms: insufficient ? nul : qs(ok, 'e2e500_ms'),
  };
}

function leaderboard(q) {
  const { window, rows } = filtered(q);
  const by = (q.get('by') ?? 'provider,model').split(',').filter(Boolean);
  for (const b of by) if (!kLabels.includes(b)) throw new BadParam('by', `by: unknown label '${b}'`);
  const out = groupBy(rows, by).map(({ labels, list }) => ({ ...labels, ...cell(list) }));
  out.sort((a, b) => (a.insufficient - b.insufficient) || ((a.ttft_ms.p50 ?? 0) - (b.ttft_ms.p50 ?? 0)));
  return { window, generated_at: new Date(startNow).toISOString(), min_samples: kMinSamples, rows: out };
}

function metricOf(q) {
  const metric = q.get('metric') ?? 'ttft';
  if (!kMetricField[metric]) throw new BadParam('metric', `metric: expected ttft, tpot, e2e or e2e500, got '${metric}'`);
  return metric;
}

function quantileParam(s) {
  const v = Number(s);
  if (!(v > 0 && v < 1)) throw new BadParam('q', `q: expected a quantile in (0, 1), got '${s}'`);
  return v;
}

function heatmap(q) {
  const { window, rows } = filtered(q);
  const metric = metricOf(q);
  const p = quantileParam(q.get('q') ?? '0.5');
  const tz = q.get('tz') ?? 'UTC';
  let fmt;
  try {
    fmt = new Intl.DateTimeFormat('en-US', { timeZone: tz, hour: 'numeric', hourCycle: 'h23', weekday: 'short' });
  } catch {
    throw new BadParam('tz', `tz: expected an IANA time zone, got '${tz}'`);
  }
  const by = q.get('by') ?? 'weekday';
  if (by !== 'weekday' && by !== 'model') throw new BadParam('by', `by: expected weekday or model, got '${by}'`);
  const days = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
  const keyed = rows.map((r) => {
    const parts = Object.fromEntries(fmt.formatToParts(new Date(r.ts)).map((x) => [x.type, x.value]));
    return { ...r, hour: Number(parts.hour), weekday: days.indexOf(parts.weekday) };
  });
  const keys = by === 'weekday' ? ['hour', 'weekday'] : ['hour', 'provider', 'model'];
  const cells = groupBy(keyed, keys).map(({ labels, list }) => {
    const ok = list.filter((r) => r.status === 'ok');
    const insufficient = ok.length < kMinSamples;
    return { ...labels, value: insufficient ? null : quantile(values(ok, kMetricField[metric]), p), samples: list.length, insufficient };
  });
  return { metric, q: p, tz, window, by, cells };
}

function timeseries(q) {
  const { window, rows } = filtered(q);
  const metric = metricOf(q);
  const ps = (q.get('q') ?? '0.5').split(',').map(quantileParam);
  const bucket = q.get('bucket') ?? (parseWindow(window) <= 6 * hour ? 'minute' : 'hour');
  const size = bucket === 'minute' ? 60_000 : hour;
  const series = groupBy(rows, ['provider', 'model']).map(({ labels, list }) => {
    const buckets = groupBy(list.map((r) => ({ ...r, b: Math.floor(r.ts / size) * size })), ['b']);
    buckets.sort((a, b) => a.labels.b - b.labels.b);
    return {
      ...labels,
      points: buckets.map(({ labels: { b }, list: bl }) => {
        const ok = bl.filter((r) => r.status === 'ok');
        const insufficient = ok.length < kMinSamples;
        const v = values(ok, kMetricField[metric]);
        const point = { t: new Date(b).toISOString().replace('.000Z', 'Z'), samples: bl.length, insufficient };
        for (const p of ps) point[`p${Math.round(p * 100)}`] = insufficient ? null : quantile(v, p);
        return point;
      }),
    };
  });
  return { metric, bucket, window, series };
}

function distribution(q) {
  const { window, rows } = filtered(q);
  const metric = metricOf(q);
  const points = Math.min(1000, Math.max(2, Number(q.get('points') ?? 100)));
  const series = groupBy(rows, ['provider', 'model']).map(({ labels, list }) => {
    const ok = list.filter((r) => r.status === 'ok');
    const v = values(ok, kMetricField[metric]);
    const insufficient = ok.length < kMinSamples;
    const cdf = [];
    if (!insufficient) for (let i = 1; i <= points; i++) cdf.push([quantile(v, i / points), i / points]);
    return { ...labels, samples: list.length, insufficient, cdf };
  });
  return { metric, window, series };
}

function regions(q) {
  const { window, rows } = filtered(q);
  const out = groupBy(rows, ['client_region', 'upstream_region', 'provider', 'model']).map(({ labels, list }) => {
    const c = cell(list);
    return { ...labels, samples: c.samples, errors: c.errors, insufficient: c.insufficient, ttft_ms: c.ttft_ms, e2e_ms: c.e2e_ms };
  });
  out.sort((a, b) => a.client_region.localeCompare(b.client_region) || (a.ttft_ms.p50 ?? 0) - (b.ttft_ms.p50 ?? 0));
  return { window, rows: out };
}

function gateway(q) {
  const { window, rows } = filtered(q);
  const gw = rows.filter((r) => r.source === 'gateway');
  const count = (key, init) => {
    const o = { ...init };
    for (const r of gw) o[r[key]] = (o[r[key]] ?? 0) + 1;
    return o;
  };
  const ov = values(gw, 'overhead_ms');
  return {
    window,
    requests: gw.filter((r) => r.route === 'primary').length,
    attempts: gw.length,
    cache: count('cache', { miss: 0, exact: 0, semantic: 0, bypass: 0 }),
    route: count('route', { primary: 0, fallback: 0, hedge: 0 }),
    status: count('status', { ok: 0 }),
    overhead_ms: { p50: quantile(ov, 0.5), p95: quantile(ov, 0.95), p99: quantile(ov, 0.99), samples: ov.length, insufficient: ov.length < kMinSamples },
    keys: groupBy(gw, ['client_key'])
      .map(({ labels, list }) => {
        const side = (field) => {
          const v = values(list, field);
          const insufficient = v.length < kMinSamples;
          return { p50: insufficient ? null : quantile(v, 0.5), p95: insufficient ? null : quantile(v, 0.95), p99: insufficient ? null : quantile(v, 0.99), samples: v.length, insufficient };
        };
        return {
          client_key: labels.client_key,
          requests: list.filter((r) => r.route === 'primary').length,
          attempts: list.length,
          errors: list.filter((r) => r.status !== 'ok').length,
          prompt_tokens: list.reduce((a, r) => a + r.prompt_tokens, 0),
          output_tokens: list.reduce((a, r) => a + r.output_tokens, 0),
          ttft_ms: side('ttft_ms'),
          e2e_ms: side('e2e_ms'),
        };
      })
      .sort((a, b) => b.requests - a.requests),
    keys_truncated: false,
  };
}

// GET /api/v1/gateway/cache: the gateway's live counters (served here without an ETag: the
// page must also take an answer that has none); fixed
// numbers, so a test can compute what the page must show.
const kCacheStats = {
  models: [
    {
      model: 'gpt-4o',
      mode: 'exact',
      requests: { miss: 120, exact: 45, semantic: 0, refresh: 2, bypass: 30 },
      saved_seconds: 83.4,
      similarity: { bounds: [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99], counts: [0, 0, 0, 0, 0, 0, 0, 0, 0] },
    },
    {
      model: 'claude-3-5-sonnet',
      mode: 'semantic',
      requests: { miss: 80, exact: 20, semantic: 15, refresh: 0, bypass: 5 },
      saved_seconds: 3961.5,
      similarity: { bounds: [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99], counts: [31, 12, 9, 7, 4, 3, 6, 5, 18] },
    },
  ],
  memory: { bytes: 1_572_864, max_bytes: 268_435_456, entries: 80, evictions: 0 },
  shared: { kind: 'local', up: true, hits: 12, errors: 0 },
};

// GET /api/v1/gateway/provider-cache: the real one reads the gateway's live metrics (every ok
// streamed attempt since start); here every gateway record with a TTFT, any window.
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);  // by code unit, as the gateway sorts

function providerCache() {
  const groups = new Map();
  for (const r of records) {
    if (r.source !== 'gateway' || r.status !== 'ok' || r.ttft_ms === null) continue;
    const key = `${r.provider}\u0000${r.model}`;
    if (!groups.has(key)) groups.set(key, { provider: r.provider, model: r.model, hit: [], miss: [] });
    groups.get(key)[r.prompt_cache_hit ? 'hit' : 'miss'].push(r.ttft_ms);
  }
  const side = (list) => {
    const sorted = [...list].sort((a, b) => a - b);
    const mean = sorted.length ? Math.round((sorted.reduce((a, b) => a + b, 0) / sorted.length) * 1000) / 1000 : null;
    return { samples: sorted.length, mean_ms: mean, p50_ms: quantile(sorted, 0.5), p95_ms: quantile(sorted, 0.95) };
  };
  const rows = [...groups.values()]
    .sort((a, b) => cmp(a.provider, b.provider) || cmp(a.model, b.model))
    .map((g) => ({ provider: g.provider, model: g.model, hit: side(g.hit), miss: side(g.miss) }));
  return { scope: 'since_start', rows };
}

// GET /api/v1/upstreams: the router's live state (src/route/README.md). Fixed numbers, so a
// test can say what the page must show: on llama-3-70b traffic has left the slow replica-3
// (8% of the last minute's attempts), gpt-4o's first choice has its breaker open and its
// backup is half open, and the local server has not been measured yet. The attempt counts
// follow the data generation, so with --churn-ms this answer and its ETag move on too.
const up = (provider, model, region, o) => ({
  provider, model, region, measured: true, ttft_ms: 0, ttft_p95_ms: 0, tpot_ms: 0, in_flight: 0, error_rate: 0,
  breaker: 'closed', attempts: 0, failures: 0, breaker_opens: 0, tokens_last_minute: 0, hedges: { sent: 0, won: 0, lost: 0 }, ...o,
});
const kUpstreams = [
  up('replica-1', 'llama', '', { ttft_ms: 212.5, ttft_p95_ms: 301.2, tpot_ms: 20.4, in_flight: 3, attempts: 1200, tokens_last_minute: 48000, hedges: { sent: 14, won: 9, lost: 5 } }),
  up('replica-2', 'llama', '', { ttft_ms: 228.1, ttft_p95_ms: 340.7, tpot_ms: 21.9, in_flight: 4, error_rate: 0.004, attempts: 1150, failures: 5, tokens_last_minute: 45100, hedges: { sent: 11, won: 5, lost: 6 } }),
  up('replica-3', 'llama', '', { ttft_ms: 1184, ttft_p95_ms: 2210.4, tpot_ms: 48.3, in_flight: 1, error_rate: 0.021, attempts: 640, failures: 14, tokens_last_minute: 6200, hedges: { sent: 2, won: 0, lost: 2 } }),
  up('openai-sim', 'gpt-4o', 'us-east-1', { ttft_ms: 1000, ttft_p95_ms: 2050, tpot_ms: 23.8, error_rate: 0.62, breaker: 'open', attempts: 410, failures: 96, breaker_opens: 3 }),
  up('azure-sim', 'gpt-4o', 'eastus2', { ttft_ms: 301.6, ttft_p95_ms: 455, tpot_ms: 24.1, in_flight: 2, error_rate: 0.01, attempts: 2300, failures: 23, tokens_last_minute: 91000, hedges: { sent: 40, won: 12, lost: 28 } }),
  up('backup-sim', 'gpt-4o', 'us-west-2', { ttft_ms: 640, ttft_p95_ms: 1210, tpot_ms: 26, error_rate: 0.35, breaker: 'half_open', attempts: 55, failures: 19, breaker_opens: 1, tokens_last_minute: 800 }),
  up('local', 'qwen-2.5-7b', '', { measured: false }),
];
const kRoutingModels = [
  { name: 'llama-3-70b', routing: 'latency', hedge: 'p95', ttft_deadline_ms: 0, members: [
    { provider: 'replica-1', model: 'llama', local: false, share: 0.47 },
    { provider: 'replica-2', model: 'llama', local: false, share: 0.45 },
    { provider: 'replica-3', model: 'llama', local: false, share: 0.08 },
  ] },
  { name: 'gpt-4o', routing: 'priority', hedge: 250, ttft_deadline_ms: 2000, members: [
    { provider: 'openai-sim', model: 'gpt-4o', local: false, share: 0 },
    { provider: 'azure-sim', model: 'gpt-4o', local: false, share: 0.97 },
    { provider: 'backup-sim', model: 'gpt-4o', local: false, share: 0.03 },
  ] },
  { name: 'assistant', routing: 'affinity', hedge: 'off', ttft_deadline_ms: 0, members: [
    { provider: 'replica-1', model: 'llama', local: false, share: 0.55 },
    { provider: 'replica-2', model: 'llama', local: false, share: 0.45 },
    { provider: 'local', model: 'qwen-2.5-7b', local: true, share: 0 },
  ] },
];

function upstreams() {
  const grown = (n) => (n > 0 ? n + generation - 1 : n);
  return { upstreams: kUpstreams.map((u) => ({ ...u, attempts: grown(u.attempts) })), models: kRoutingModels, hedges_cancelled: 21 };
}

// GET /api/v1/status: per provider/model, hourly buckets of the window (24h or 7d) ending with
// the current hour. The baseline is the model's TTFT p50 over all the mock's data; a bucket is
// red at >= 2x it or >= 10% errors, amber at >= 1.5x or >= 5%, none under kMinSamples
// successful samples. Consecutive red hours of a model are one incident (ids in time order);
// one that reaches the last bucket with data is open.
// Memoised per data generation: the real server answers from its rollups in a few ms, and the
// status page's first-load budget (300 ms) should measure the page, not this mock's loops.
const memo = new Map();
function memoised(key, fn) {
  const k = `${generation}:${key}`;
  if (!memo.has(k)) {
    if (memo.size > 16) memo.clear();
    memo.set(k, fn());
  }
  return structuredClone(memo.get(k));
}

function statusBuckets(windowHours) {
  return memoised(`status:${windowHours}`, () => statusBucketsUncached(windowHours));
}

function statusBucketsUncached(windowHours) {
  const kinds = new Map();
  for (const r of records) {
    const key = `${r.provider}\u0000${r.model}`;
    if (!kinds.has(key)) kinds.set(key, { provider: r.provider, model: r.model, all: [] });
    kinds.get(key).all.push(r);
  }
  const last = Math.max(startNow, Math.floor(Date.now() / hour) * hour);
  const first = last - (windowHours - 1) * hour;
  const models = [];
  for (const k of [...kinds.values()].sort((a, b) => cmp(a.provider, b.provider) || cmp(a.model, b.model))) {
    const okAll = values(k.all.filter((r) => r.status === 'ok'), 'ttft_ms');
    const baseline = okAll.length >= kMinSamples ? quantile(okAll, 0.5) : null;
    const byHour = new Map();
    for (const r of k.all) {
      const b = Math.floor(r.ts / hour) * hour;
      if (!byHour.has(b)) byHour.set(b, []);
      byHour.get(b).push(r);
    }
    const buckets = [];
    for (let t = first; t <= last; t += hour) {
      const list = byHour.get(t) ?? [];
      const ok = list.filter((r) => r.status === 'ok');
      const errors = list.length - ok.length;
      const p50 = ok.length >= kMinSamples ? quantile(values(ok, 'ttft_ms'), 0.5) : null;
      const ratio = p50 !== null && baseline ? Math.round((p50 / baseline) * 100) / 100 : null;
      const errRate = list.length ? errors / list.length : 0;
      let state = 'none';
      if (ok.length >= kMinSamples) state = ratio >= 2 || errRate >= 0.1 ? 'red' : ratio >= 1.5 || errRate >= 0.05 ? 'amber' : 'green';
      buckets.push({ t: new Date(t).toISOString().replace('.000Z', 'Z'), state, samples: list.length, errors, ttft_p50_ms: p50, baseline_ttft_p50_ms: p50 === null ? null : baseline, ratio, incidents: [] });
    }
    models.push({ provider: k.provider, model: k.model, buckets, baseline });
  }
  return models;
}

// Incidents over the mock's whole history (7 days), so both windows and /incidents agree.
function incidentList() {
  return memoised('incidents', incidentListUncached);
}

function incidentListUncached() {
  const models = statusBuckets(7 * 24 + 1);
  const out = [];
  for (const m of models) {
    let run = null;
    const lastData = m.buckets.findLastIndex((b) => b.state !== 'none');
    m.buckets.forEach((b, i) => {
      if (b.state === 'red') {
        if (!run) run = { provider: m.provider, model: m.model, from: i, to: i, worst: 0, errorRate: 0, buckets: [] };
        run.to = i;
        run.worst = Math.max(run.worst, b.ratio ?? 0);
        run.errorRate = Math.max(run.errorRate, b.samples ? b.errors / b.samples : 0);
        run.buckets.push(b.t);
      } else if (b.state !== 'none') {
        if (run) out.push({ ...run, open: false });
        run = null;
      }
    });
    if (run) out.push({ ...run, open: run.to >= lastData });
    for (const inc of out.filter((x) => x.model === m.model && x.provider === m.provider)) {
      inc.start = Date.parse(m.buckets[inc.from].t);
      inc.end = inc.open ? null : Date.parse(m.buckets[inc.to].t) + hour;
      inc.baseline = m.baseline;
    }
  }
  out.sort((a, b) => a.start - b.start || cmp(a.model, b.model));
  out.forEach((inc, i) => (inc.id = i + 1));
  return out;
}

function status(q) {
  return memoised(`answer:status?${q}`, () => statusUncached(q));
}

function statusUncached(q) {
  for (const k of q.keys()) if (k !== 'window' && k !== 'format') throw new BadParam(k, `${k}: not a parameter of /status`);
  const win = q.get('window') ?? '24h';
  if (win !== '24h' && win !== '7d') throw new BadParam('window', `window: expected 24h or 7d, got '${win}'`);
  const incidents = incidentList();
  const models = statusBuckets(win === '7d' ? 7 * 24 : 24).map(({ provider, model, buckets }) => {
    const mine = incidents.filter((x) => x.provider === provider && x.model === model);
    for (const b of buckets) b.incidents = mine.filter((x) => x.buckets.includes(b.t)).map((x) => x.id);
    const open = mine.find((x) => x.open);
    const recent = buckets.slice(-2).reverse().find((b) => b.state !== 'none');
    return { provider, model, state: open ? 'red' : recent?.state ?? 'none', open_incident: open ? open.id : null, buckets };
  });
  return { generated_at: new Date(startNow).toISOString(), window: win, bucket: 'hour', incidents_enabled: true, models, truncated: false };
}

function incidents(q) {
  return memoised(`answer:incidents?${q}`, () => incidentsUncached(q));
}

function incidentsUncached(q) {
  for (const k of q.keys()) if (!['state', 'limit', 'format'].includes(k)) throw new BadParam(k, `${k}: not a parameter of /incidents`);
  const state = q.get('state') ?? 'all';
  if (state !== 'open' && state !== 'all') throw new BadParam('state', `state: expected open or all, got '${state}'`);
  const limit = Number(q.get('limit') ?? 100);
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= 1000)) throw new BadParam('limit', `limit: expected 1-1000, got '${q.get('limit')}'`);
  const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
  const all = incidentList();
  const open = all.filter((x) => x.open);
  const closed = all.filter((x) => !x.open).reverse();
  const regionsOf = new Map();
  for (const r of records) {
    const k = `${r.provider}\u0000${r.model}`;
    if (!regionsOf.has(k)) regionsOf.set(k, new Set());
    regionsOf.get(k).add(r.upstream_region);
  }
  const list = (state === 'open' ? open : [...open, ...closed]).slice(0, limit).map((x) => {
    const regions = [...regionsOf.get(`${x.provider}\u0000${x.model}`)];
    const end = x.end ?? startNow;
    return {
      id: x.id, state: x.open ? 'open' : 'closed', provider: x.provider, model: x.model,
      start: iso(x.start), detected: iso(x.start + 5 * 60_000), end: x.end === null ? null : iso(x.end),
      duration_s: Math.round((end - x.start) / 1000),
      // Opened by latency (TTFT p50 at 2x or more) or, when not, by errors alone.
      size: { metric: x.worst >= 2 ? 'ttft_p50_ms' : null, ratio: x.worst >= 2 ? x.worst : null, error_rate: Math.round(x.errorRate * 1000) / 1000 },
      cells: regions.map((upstream_region) => ({ provider: x.provider, model: x.model, upstream_region, since: iso(x.start),
        breaches: x.worst >= 2
          ? [{ metric: 'ttft_p50_ms', recent: Math.round(x.baseline * x.worst * 10) / 10, baseline: x.baseline, ratio: x.worst }]
          : [{ metric: 'error_rate', recent: Math.round(x.errorRate * 1000) / 1000, baseline: 0.012, ratio: Math.round((x.errorRate / 0.012) * 100) / 100 }] })),
    };
  });
  return { generated_at: new Date(startNow).toISOString(), evaluated_at: new Date(startNow).toISOString(), evaluations: 120, open: open.length, incidents: list };
}

// format=csv: RFC 4180 (CRLF, quoted when needed). The answer's list (rows, cells, series,
// models, incidents) becomes one line per item, nested objects as dotted columns; an item's
// own list (points, cdf, buckets, cells) one line per element with the item's fields repeated.
// An answer without a list is one line.
function csvCell(v) {
  if (v === null || v === undefined) return '';
  const s = Array.isArray(v) ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(';') : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function flat(obj, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flat(v, key, out);
    else out[key] = v;
  }
  return out;
}

function toCsv(body) {
  const listKey = ['rows', 'cells', 'series', 'upstreams', 'models', 'incidents'].find((k) => Array.isArray(body[k]));
  const lines = [];
  if (!listKey) lines.push(flat(body));
  else {
    for (const item of body[listKey]) {
      const nestedKey = Object.keys(item).find((k) => Array.isArray(item[k]) && item[k].length > 0 && typeof item[k][0] === 'object');
      if (!nestedKey) {
        lines.push(flat(item));
        continue;
      }
      const { [nestedKey]: nested, ...rest } = item;
      const parent = flat(rest);
      for (const el of nested) lines.push({ ...parent, ...(Array.isArray(el) ? Object.fromEntries(el.map((v, i) => [`${nestedKey}.${i}`, v])) : flat(el, nestedKey)) });
    }
  }
  const cols = [];
  for (const l of lines) for (const k of Object.keys(l)) if (!cols.includes(k)) cols.push(k);
  return [cols.map(csvCell).join(','), ...lines.map((l) => cols.map((c) => csvCell(l[c])).join(','))].join('\r\n') + '\r\n';
}

// GET /badge/{provider}/{model}/{metric}.svg: a tiny static badge (the real one draws the number).
const kBadgeMetrics = ['ttft_p50', 'ttft_p95', 'tpot_p50', 'e2e_p50', 'tps_p50', 'error_rate', 'status'];
function badge(metric) {
  const label = metric.replace('_', ' ');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="20" role="img" aria-label="${label}: mock"><rect width="70" height="20" fill="#555"/><rect x="70" width="50" height="20" fill="#15803d"/><g fill="#fff" font-family="sans-serif" font-size="11"><text x="6" y="14">${label}</text><text x="76" y="14">mock</text></g></svg>`;
}

function ingest(body, contentType) {
  let list;
  if (contentType.includes('ndjson')) list = body.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  else list = JSON.parse(body);
  if (!Array.isArray(list)) list = [list];
  let accepted = 0;
  const errors = [];
  list.forEach((m, index) => {
    if (typeof m.request_id !== 'string' || !m.request_id || typeof m.ts_us !== 'number') {
      errors.push({ index, field: 'request_id', message: 'expected a non-empty string' });
      return;
    }
    const ms = (v) => (typeof v === 'number' ? v / 1e6 : null);
    const ttft = ms(m.first_token_ns);
    const n = m.output_tokens ?? 0;
    const tpot = n >= 2 && m.last_token_ns != null && m.first_token_ns != null ? (m.last_token_ns - m.first_token_ns) / 1e6 / (n - 1) : null;
    records.push({
      ts: Math.floor(m.ts_us / 1000),
      provider: String(m.provider ?? ''),
      model: String(m.model ?? ''),
      task: String(m.task ?? ''),
      source: String(m.source ?? 'submitted'),
      api: String(m.api ?? ''),
      stream: m.stream !== false,
      client_region: String(m.client_region ?? ''),
      upstream_region: String(m.upstream_region ?? ''),
      status: String(m.status ?? 'ok'),
      ttft_ms: ttft,
      tpot_ms: tpot,
      e2e_ms: ms(m.done_ns),
      e2e500_ms: ttft !== null && tpot !== null ? ttft + 499 * tpot : null,
      cache: String(m.cache ?? 'bypass'),
      route: String(m.route ?? 'primary'),
      overhead_ms: ms(m.overhead_ns),
      prompt_cache_hit: (m.cached_prompt_tokens ?? 0) > 0,
    });
    accepted++;
  });
  if (accepted > 0) generation++;
  return { accepted, duplicates: 0, rejected: errors.length, errors };
}

// ------------------------------------------------------------------ HTTP

const kRoutes = { leaderboard, heatmap, timeseries, distribution, regions, gateway, status };
// --no-incidents: a server without `[incidents]`: /api/v1/incidents is a 404.
const incidentsEnabled = !args.includes('--no-incidents');
const kTypes = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json' };

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
}

function errorBody(message, param) {
  return { error: { message, type: 'invalid_request_error', param: param ?? null, code: null } };
}

function serveStatic(url, res) {
  const rel = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname.slice(1));
  const file = path.resolve(dist, rel);
  if (!file.startsWith(dist + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    return send(res, 404, errorBody(`no such file: ${url.pathname}`));
  }
  const type = kTypes[path.extname(file)] ?? 'application/octet-stream';
  res.writeHead(200, {
    'content-type': type,
    'cache-control': rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
    // The policy `tokenradar serve` sends with the dashboard (src/gateway): a violation shows
    // up as a console error in the browser tests.
    ...(type.startsWith('text/html') ? { 'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'" } : {}),
  });
  fs.createReadStream(file).pipe(res);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const asCsv = url.searchParams.get('format') === 'csv';
  const csvHeaders = asCsv ? { 'content-type': 'text/csv; charset=utf-8' } : {};
  if (url.pathname === '/api/v1/gateway/cache' && req.method === 'GET') {
    return send(res, 200, asCsv ? toCsv(kCacheStats) : kCacheStats, { 'cache-control': 'no-store', ...csvHeaders });
  }
  if (url.pathname === '/api/v1/gateway/provider-cache') {
    if (req.method !== 'GET') return send(res, 405, errorBody('use GET'));
    const etag = `"pc${generation}${asCsv ? 'c' : ''}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag, 'cache-control': 'no-cache' });
      return res.end();
    }
    return send(res, 200, asCsv ? toCsv(providerCache()) : providerCache(), { etag, 'cache-control': 'no-cache', ...csvHeaders });
  }
  if (url.pathname === '/api/v1/upstreams') {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, errorBody('use GET or HEAD'), { allow: 'GET, HEAD' });
    const etag = `"up${generation}${asCsv ? 'c' : ''}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag, 'cache-control': 'no-cache' });
      return res.end();
    }
    const body = asCsv ? toCsv(upstreams()) : JSON.stringify(upstreams());
    res.writeHead(200, { 'content-type': asCsv ? 'text/csv; charset=utf-8' : 'application/json', 'content-length': Buffer.byteLength(body), etag, 'cache-control': 'no-cache' });
    return res.end(req.method === 'HEAD' ? undefined : body);
  }
  const b = /^\/badge\/([^/]+)\/([^/]+)\/([a-z0-9_]+)\.svg$/.exec(url.pathname);
  if (b && req.method === 'GET') {
    if (!kBadgeMetrics.includes(b[3])) return send(res, 404, errorBody(`badge: unknown metric '${b[3]}'`));
    return send(res, 200, badge(b[3]), { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=60' });
  }
  if (url.pathname === '/api/v1/incidents' && req.method === 'GET' && incidentsEnabled) {
    try {
      const body = incidents(url.searchParams);
      const csv = url.searchParams.get('format') === 'csv';
      return send(res, 200, csv ? toCsv(body) : body, { 'cache-control': 'no-store', ...(csv ? { 'content-type': 'text/csv; charset=utf-8' } : {}) });
    } catch (e) {
      if (e instanceof BadParam) return send(res, 400, errorBody(e.message, e.param));
      throw e;
    }
  }
  const m = /^\/api\/v1\/([a-z]+)$/.exec(url.pathname);
  if (m && req.method === 'POST' && m[1] === 'measurements') {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        send(res, 200, ingest(body, req.headers['content-type'] ?? ''));
      } catch (e) {
        send(res, 400, errorBody(`body: expected a JSON array or NDJSON (${e.message})`));
      }
    });
    return;
  }
  if (m && req.method === 'GET' && kRoutes[m[1]]) {
    const format = url.searchParams.get('format') ?? 'json';
    if (format !== 'json' && format !== 'csv') return send(res, 400, errorBody(`format: expected csv or json, got '${format}'`, 'format'));
    // Strong ETag from the data generation: unchanged data answers 304.
    const etag = `"g${generation}${format === 'csv' ? 'c' : ''}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag, 'cache-control': 'public, max-age=10' });
      return res.end();
    }
    try {
      const q = new URLSearchParams(url.searchParams);
      q.delete('format');
      const body = kRoutes[m[1]](q);
      if (format === 'csv') return send(res, 200, toCsv(body), { etag, 'cache-control': 'public, max-age=10', 'content-type': 'text/csv; charset=utf-8' });
      return send(res, 200, body, { etag, 'cache-control': 'public, max-age=10' });
    } catch (e) {
      if (e instanceof BadParam) return send(res, 400, errorBody(e.message, e.param));
      throw e;
    }
  }
  if (req.method === 'GET' && !url.pathname.startsWith('/api/')) return serveStatic(url, res);
  send(res, 404, errorBody(`no route: ${req.method} ${url.pathname}`));
});

// Warm the memoised status answers before saying ready.
status(new URLSearchParams({ window: '24h' }));
status(new URLSearchParams({ window: '7d' }));
incidents(new URLSearchParams());

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`dashboard: http://127.0.0.1:${server.address().port}/\n`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
