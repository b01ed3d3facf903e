// The observatory's query API (docs/observatory-api.md): response types and a fetch that
// revalidates with ETag/If-None-Match, so a poll of unchanged data costs a 304 and no render.

export interface Quantiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface LeaderboardRow {
  provider: string;
  model: string;
  samples: number;
  errors: number;
  error_rate: number | null;
  insufficient: boolean;
  ttft_ms: Quantiles | null;
  tpot_ms: Quantiles | null;
  decode_tps_p50: number | null;
  e2e_ms: Quantiles | null;
  e2e500_ms: Quantiles | null;
  // With by=...: the extra labels as keys.
  [label: string]: unknown;
}

export interface Leaderboard {
  window: string;
  generated_at: string;
  min_samples: number;
  rows: LeaderboardRow[];
}

export interface HeatmapCell {
  hour: number;
  weekday?: number;
  provider?: string;
  model?: string;
  value: number | null;
  samples: number;
  insufficient: boolean;
}

export interface Heatmap {
  metric: string;
  q: number;
  tz: string;
  window: string;
  by: 'weekday' | 'model';
  cells: HeatmapCell[];
}

export interface TimeseriesPoint {
  t: string;
  samples: number;
  insufficient?: boolean;
  [quantile: string]: number | string | boolean | null | undefined;
}

export interface TimeseriesSeries {
  provider: string;
  model: string;
  points: TimeseriesPoint[];
}

export interface Timeseries {
  metric: string;
  bucket: 'minute' | 'hour';
  window: string;
  series: TimeseriesSeries[];
}

export interface DistributionSeries {
  provider: string;
  model: string;
  samples: number;
  insufficient: boolean;
  cdf: Array<[number, number]>;
}

export interface Distribution {
  metric: string;
  window: string;
  series: DistributionSeries[];
}

export interface RegionRow {
  client_region: string;
  upstream_region: string;
  provider: string;
  model: string;
  samples: number;
  errors: number;
  insufficient: boolean;
  ttft_ms: Quantiles | null;
  e2e_ms: Quantiles | null;
}

export interface Regions {
  window?: string;
  rows: RegionRow[];
}

export interface GatewayStats {
  window: string;
  requests: number;
  attempts: number;
  cache: Record<string, number>;
  route: Record<string, number>;
  status: Record<string, number>;
  overhead_ms: (Quantiles & { samples: number; insufficient?: boolean }) | null;
  /** Per client key (`client_key` "" = requests without one), most requests first. */
  keys?: GatewayKeyRow[];
  keys_truncated?: boolean;
}

export interface GatewayKeyRow {
  client_key: string;
  requests: number;
  attempts: number;
  errors: number;
  prompt_tokens: number;
  output_tokens: number;
  ttft_ms: Quantiles & { samples: number; insufficient: boolean };
  e2e_ms: Quantiles & { samples: number; insufficient: boolean };
}

/** `GET /api/v1/gateway/cache`: what the response cache did per model since the gateway
 *  started (src/gateway/README.md). `memory` is null when no model caches. */
export interface CacheModelStats {
  model: string;
  mode: 'exact' | 'semantic';
  requests: { miss: number; exact: number; semantic: number; refresh: number; bypass: number };
  saved_seconds: number;
  /** Semantic lookups by their best match's cosine similarity: counts has one bucket more
   *  than bounds (below the first bound, ..., at or over the last). */
  similarity: { bounds: number[]; counts: number[] };
}

export interface CacheStats {
  models: CacheModelStats[];
  memory: { bytes: number; max_bytes: number; entries: number; evictions: number } | null;
  /** The shared tier (L2), when there is one: Redis, or the local SQLite file. */
  shared?: { kind: 'redis' | 'local'; up: boolean; hits: number; errors: number } | null;
}

/** GET /api/v1/gateway/provider-cache: the gateway's live TTFT split by provider prompt-cache
 *  hit (the upstream's usage reported cached prompt tokens) or miss, since it started. */
export interface ProviderCacheSide {
  samples: number;
  mean_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface ProviderCacheStats {
  scope: string;
  rows: Array<{ provider: string; model: string; hit: ProviderCacheSide; miss: ProviderCacheSide }>;
}

/** GET /api/v1/upstreams: the gateway's live routing state (src/route/README.md). Each
 *  upstream is a provider endpoint and a model as the router sees it now. */
export interface UpstreamState {
  provider: string;
  model: string;
  region: string;
  /** false until the first TTFT was observed: the estimates are then 0, not measurements. */
  measured: boolean;
  /** The peak-EWMA TTFT the router compares, per prompt unit (1,024 prompt tokens). */
  ttft_ms: number;
  /** Of the last 128 normalised TTFTs: the adaptive hedge delay's base. */
  ttft_p95_ms: number;
  tpot_ms: number;
  in_flight: number;
  /** EWMA of failures per attempt. */
  error_rate: number;
  breaker: 'closed' | 'open' | 'half_open';
  attempts: number;
  failures: number;
  breaker_opens: number;
  tokens_last_minute: number;
  hedges: { sent: number; won: number; lost: number };
}

export interface RoutingMember {
  provider: string;
  model: string;
  /** The offload target (a local server): the last member. */
  local: boolean;
  /** This member's share of the virtual model's attempts over the last minute, 0..1. */
  share: number;
}

export interface RoutingModel {
  name: string;
  routing: 'priority' | 'round_robin' | 'latency' | 'affinity';
  /** "off", "pNN" (the primary's recent TTFT quantile) or a fixed delay in ms. */
  hedge: string | number;
  /** 0: none. */
  ttft_deadline_ms: number;
  members: RoutingMember[];
}

export interface Upstreams {
  upstreams: UpstreamState[];
  models: RoutingModel[];
  /** Losing attempts of hedged pairs the gateway cancelled, since it started. */
  hedges_cancelled: number;
}

/** GET /api/v1/upstreams (ETag, Cache-Control: no-cache) through a page's context (getJson
 *  underneath), so the render records the ETag it shows and an unchanged state is a 304. */
export function getUpstreams(ctx: { get<T>(path: string): Promise<T> }): Promise<Upstreams> {
  return ctx.get<Upstreams>('upstreams');
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly param?: string,
  ) {
    super(message);
  }
}

export interface Fetched<T> {
  data: T;
  /** false when the server answered 304 (the data is the copy from the previous poll). */
  changed: boolean;
  /** The URL asked and the ETag of `data` (null when the server sent none). */
  url: string;
  etag: string | null;
}

interface Entry {
  etag: string;
  data: unknown;
}

// Bounded: one entry per distinct URL the viewer has looked at during this session.
const kMaxEntries = 200;
const cache = new Map<string, Entry>();
// Resources without an ETag (the gateway's live counters): the last body's text, so an
// unchanged answer does not re-render the page either.
const lastBodies = new Map<string, Entry>();

function remember(map: Map<string, Entry>, url: string, entry: Entry): void {
  map.delete(url);
  map.set(url, entry);
  if (map.size > kMaxEntries) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

/** Builds `api/v1/<path>?<params>` relative to the page, so a path prefix keeps working. */
export function apiUrl(path: string, params?: URLSearchParams): string {
  const url = new URL(`api/v1/${path}`, document.baseURI);
  if (params) url.search = params.toString();
  return url.toString();
}

/** GET an API resource. Suspends until the response body is read. Throws ApiError with the
 *  server's message (it names the bad parameter) or a network error. */
export async function getJson<T>(path: string, params?: URLSearchParams): Promise<Fetched<T>> {
  const url = apiUrl(path, params);
  const cached = cache.get(url);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (cached) headers['if-none-match'] = cached.etag;
  // no-store: our own cache revalidates; the browser's must not answer 200 from memory.
  const res = await fetch(url, { headers, cache: 'no-store' });
  if (res.status === 304 && cached) return { data: cached.data as T, changed: false, url, etag: cached.etag };
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    let param: string | undefined;
    try {
      const body = (await res.json()) as { error?: { message?: unknown; param?: unknown } };
      if (typeof body.error?.message === 'string') message = body.error.message;
      if (typeof body.error?.param === 'string') param = body.error.param;
    } catch {
      // Not JSON: keep the status line.
    }
    throw new ApiError(message, res.status, param);
  }
  const etag = res.headers.get('etag');
  if (etag) {
    const data = (await res.json()) as T;
    remember(cache, url, { etag, data });
    return { data, changed: true, url, etag };
  }
  const text = await res.text();
  const last = lastBodies.get(url);
  if (last && last.etag === text) return { data: last.data as T, changed: false, url, etag: null };
  const data = JSON.parse(text) as T;
  remember(lastBodies, url, { etag: text, data });
  return { data, changed: true, url, etag: null };
}

/** GET /api/v1/status?window=24h|7d: per provider and model its state now and one bucket per
 *  hour of the window. `none`: too few samples to say. */
export type StatusState = 'green' | 'amber' | 'red' | 'none';

export interface StatusBucket {
  t: string;
  state: StatusState;
  samples: number;
  errors: number;
  ttft_p50_ms: number | null;
  baseline_ttft_p50_ms: number | null;
  ratio: number | null;
  incidents: number[];
}

export interface StatusModel {
  provider: string;
  model: string;
  state: StatusState;
  open_incident: number | null;
  buckets: StatusBucket[];
}

export interface Status {
  generated_at: string;
  window: '24h' | '7d';
  bucket: 'hour';
  incidents_enabled: boolean;
  models: StatusModel[];
  truncated: boolean;
}

/** GET /api/v1/incidents (404 when the server has no `[incidents]`). */
export interface IncidentBreach {
  metric: string;
  recent: number;
  baseline: number;
  ratio: number;
}

export interface Incident {
  id: number;
  state: 'open' | 'closed';
  provider: string;
  model: string;
  start: string;
  detected: string;
  end: string | null;
  duration_s: number;
  size: { metric: string | null; ratio: number | null; error_rate: number | null };
  cells: Array<{ provider: string; model: string; upstream_region: string; since: string; breaches: IncidentBreach[] }>;
}

export interface Incidents {
  generated_at: string;
  evaluated_at: string | null;
  evaluations: number;
  open: number;
  incidents: Incident[];
}
