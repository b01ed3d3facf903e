// Test plumbing for the dashboard: starts the server under test (the real `tokenradar demo`
// or tests/mock-server.mjs; both print "dashboard: http://127.0.0.1:PORT/" when ready),
// launches Debian's chromium through playwright-core (no browser download), and collects
// console errors, dialogs and results.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

export function log(...parts) {
  process.stdout.write(`${parts.join(' ')}\n`);
}

/** Starts `command` and resolves with the dashboard URL it prints. */
export function startServer(command, argv, { timeoutMs = 90_000, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${command}: no "dashboard: http://..." line within ${timeoutMs} ms; stderr:\n${stderr.slice(-4000)}`));
    }, timeoutMs);
    const onLine = (line) => {
      const m = /dashboard: (http:\/\/\S+)/.exec(line);
      if (m && !settled) {
        settled = true;
        clearTimeout(timer);
        resolve({ url: new URL(m[1]).toString(), child, stderr: () => stderr });
      }
    };
    // The line belongs on stdout; a log line on stderr is accepted too.
    readline.createInterface({ input: child.stdout }).on('line', onLine);
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
      stderr += `${line}\n`;
      if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
      onLine(line);
    });
    child.on('exit', (code, signal) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`${command} exited (${code ?? signal}) before it was ready; stderr:\n${stderr.slice(-4000)}`));
    });
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code or signal. */
export function stopServer(child, graceMs = 15_000) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode ?? child.signalCode);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
    child.kill('SIGTERM');
  });
}

export async function launchBrowser() {
  const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    throw new Error(`${executablePath} not found: install Debian's chromium (scripts/install-deps.sh) or set CHROMIUM`);
  }
  return chromium.launch({
    executablePath,
    // --no-sandbox: tests run as root in CI containers, where chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** A page that records console errors, uncaught exceptions, dialogs and API traffic. */
export async function newPage(context) {
  const page = await context.newPage();
  const record = { consoleErrors: [], dialogs: [], responses: [], requests: [] };
  page.on('console', (msg) => {
    if (msg.type() === 'error') record.consoleErrors.push(msg.text());
  });
  page.on('pageerror', (err) => record.consoleErrors.push(`uncaught: ${err.message}`));
  page.on('dialog', (d) => {
    record.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('request', (req) => record.requests.push(req.url()));
  page.on('response', async (res) => {
    const url = res.url();
    if (!url.includes('/api/v1/')) return;
    const entry = { url, status: res.status(), etag: res.headers()['etag'] ?? null, body: null, bodyRead: null };
    record.responses.push(entry);
    // Awaitable: the page may render this response before Playwright has read its body.
    entry.bodyRead = (async () => {
      if (res.status() !== 200) return;
      try {
        entry.body = await res.json();
      } catch {
        // A navigation may discard the body; the entry still counts.
      }
    })();
    await entry.bodyRead;
  });
  return { page, record };
}

/** Waits until <main> shows a rendered route whose path starts with `prefix`. */
export async function waitReady(page, prefix, timeout = 20_000) {
  await page.waitForFunction(
    (p) => {
      const m = document.querySelector('main');
      // The filter values arrive after the first render; wait for them too.
      const f = m?.querySelector('form.filters');
      return m && m.dataset.state === 'ready' && (m.dataset.route ?? '').startsWith(p) && (!f || f.dataset.values === 'loaded');
    },
    prefix,
    { timeout },
  );
}

export class Results {
  /** `only`: a regular expression; checks whose names do not match are skipped. */
  constructor(only = '') {
    this.list = [];
    this.only = only ? new RegExp(only, 'i') : null;
  }

  async run(name, fn) {
    if (this.only && !this.only.test(name)) return;
    const t0 = Date.now();
    try {
      const notes = await fn();
      this.list.push({ name, ok: true, ms: Date.now() - t0 });
      log(`ok    ${name} (${Date.now() - t0} ms)${notes ? ` ${notes}` : ''}`);
    } catch (err) {
      this.list.push({ name, ok: false, ms: Date.now() - t0, error: err });
      log(`FAIL  ${name} (${Date.now() - t0} ms)\n      ${String(err?.stack ?? err).split('\n').join('\n      ')}`);
    }
  }

  get failed() {
    return this.list.filter((r) => !r.ok);
  }
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export function ensureDir(dir) {
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export function rel(file) {
  return path.relative(process.cwd(), file) || file;
}
