// What the browser tests compare: extractors that run in the page (they must be
// self-contained: Playwright serialises them) and comparisons against API bodies, which return
// a list of problems (empty when the page shows what the API says).

/** The number a cell shows matches `value` to the digits it shows. */
export function shows(text, value, scale = 1) {
  const t = String(text).replace(/[,\s\u00a0]|ms|%/g, '');
  const shown = Number(t);
  const decimals = (t.split('.')[1] ?? '').length;
  return Number.isFinite(shown) && Math.abs(shown - value * scale) <= 0.5 * 10 ** -decimals + 1e-9;
}

export const fmtN = (n) => `n=${n.toLocaleString('en-US')}`;

export function leaderboardDom() {
  return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map((tr) => ({
    provider: tr.dataset.provider,
    model: tr.dataset.model,
    insufficient: tr.classList.contains('is-insufficient'),
    cells: Object.fromEntries(
      Array.from(tr.querySelectorAll('[data-col]')).map((td) => [td.dataset.col, { text: td.textContent, value: td.dataset.value ?? null, title: td.getAttribute('title') ?? '' }]),
    ),
  }));
}

export function compareLeaderboard(dom, body) {
  const problems = [];
  if (dom.length !== body.rows.length) problems.push(`rows: page ${dom.length}, API ${body.rows.length}`);
  body.rows.forEach((row, i) => {
    const d = dom[i];
    const id = `${row.provider}/${row.model}`;
    if (!d || d.provider !== row.provider || d.model !== row.model) {
      problems.push(`row ${i}: page ${d?.provider}/${d?.model}, API ${id}`);
      return;
    }
    if (Number(d.cells.samples?.value) !== row.samples) problems.push(`${id} samples: page ${d.cells.samples?.value}, API ${row.samples}`);
    if (!shows(d.cells.samples?.text ?? '', row.samples)) problems.push(`${id} samples text '${d.cells.samples?.text}'`);
    if (d.insufficient !== row.insufficient) problems.push(`${id} insufficient: page ${d.insufficient}, API ${row.insufficient}`);
    if (row.insufficient) {
      if (!/insufficient data/.test(d.cells.insufficient?.text ?? '')) problems.push(`${id}: insufficient row does not say so`);
      if (d.cells.ttft_p50) problems.push(`${id}: insufficient row shows a TTFT number`);
      return;
    }
    const checks = [
      ['ttft_p50', row.ttft_ms?.p50, 1],
      ['ttft_p95', row.ttft_ms?.p95, 1],
      ['tps_p50', row.decode_tps_p50, 1],
      ['e2e_p95', row.e2e_ms?.p95, 1],
      ['error_rate', row.error_rate, 100],
    ];
    for (const [col, v, scale] of checks) {
      const c = d.cells[col];
      if (v === null || v === undefined) {
        if (c?.value) problems.push(`${id} ${col}: page shows ${c.value} for null`);
        continue;
      }
      if (!c || Number(c.value) !== v) problems.push(`${id} ${col}: page ${c?.value}, API ${v}`);
      else if (!shows(c.text, v, scale)) problems.push(`${id} ${col}: text '${c.text}' is not ${v}`);
      else if (!c.title.includes(fmtN(row.samples))) problems.push(`${id} ${col}: no sample count (title '${c.title}')`);
    }
  });
  return problems;
}

export function heatmapDom() {
  const t = document.querySelector('#heatmap');
  if (!t) return null;
  return {
    by: t.dataset.by,
    cells: Array.from(t.querySelectorAll('td.hm')).map((td) => ({
      row: td.dataset.row,
      hour: Number(td.dataset.hour),
      value: td.dataset.value ?? null,
      samples: td.dataset.samples ?? null,
      text: td.textContent,
      label: td.getAttribute('aria-label') ?? '',
      insufficient: td.classList.contains('insufficient'),
    })),
  };
}

export const kWeekdays = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

export function compareHeatmap(dom, body) {
  if (!dom) return ['no heatmap table'];
  const p = [];
  if (dom.by !== body.by) p.push(`by: page ${dom.by}, API ${body.by}`);
  const rowName = (c) => (body.by === 'weekday' ? kWeekdays[c.weekday] : `${c.model} (${c.provider})`);
  const byKey = new Map(dom.cells.map((c) => [`${c.row}|${c.hour}`, c]));
  for (const c of body.cells) {
    const d = byKey.get(`${rowName(c)}|${c.hour}`);
    const id = `${rowName(c)} ${c.hour}h`;
    if (!d) {
      p.push(`${id}: no cell`);
      continue;
    }
    if (Number(d.samples) !== c.samples) p.push(`${id} samples: page ${d.samples}, API ${c.samples}`);
    if (c.insufficient) {
      if (!d.insufficient || d.value !== null) p.push(`${id}: insufficient in the API, page shows '${d.text}'`);
      if (!/insufficient data/.test(d.label)) p.push(`${id}: label '${d.label}'`);
      if (d.text !== fmtN(c.samples)) p.push(`${id}: insufficient cell text '${d.text}'`);
    } else {
      if (Number(d.value) !== c.value) p.push(`${id}: page ${d.value}, API ${c.value}`);
      if (!shows(d.text, c.value)) p.push(`${id}: text '${d.text}' is not ${c.value}`);
      if (!d.label.includes(fmtN(c.samples))) p.push(`${id}: label without n: '${d.label}'`);
    }
  }
  const withData = dom.cells.filter((c) => c.samples !== null).length;
  if (withData !== body.cells.length) p.push(`cells with data: page ${withData}, API ${body.cells.length}`);
  return p;
}

export function xssRecords(count, provider, model) {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => ({
    metrics_spec: 1,
    request_id: `web-test-xss-${now}-${i}`,
    client_id: 'web-test',
    attempt: 1,
    status: 'ok',
    http_status: 200,
    ts_us: (now - i * 1000) * 1000,
    provider,
    model,
    endpoint: 'localhost',
    upstream_region: 'local',
    client_region: 'local',
    task: 'chat',
    source: 'submitted',
    cache: 'bypass',
    route: 'primary',
    api: 'openai',
    stream: true,
    sched_offset_ns: 0,
    headers_ns: 100_000_000,
    first_chunk_ns: 150_000_000 + i * 1_000_000,
    first_token_ns: 150_000_000 + i * 1_000_000,
    last_token_ns: 1_150_000_000 + i * 1_000_000,
    done_ns: 1_160_000_000 + i * 1_000_000,
    connect_ns: 0,
    tls_ns: 0,
    output_tokens: 41,
    token_source: 'usage',
    output_events: 41,
  }));
}
