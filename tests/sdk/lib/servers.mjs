// Starts the real `tokenradar` binary (sim, serve) on free loopback ports for the SDK tests,
// reads the URL it announces, and stops it (SIGTERM, then SIGKILL) when the test file ends.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

export const binary = process.env.TOKENRADAR_BINARY;
if (!binary) throw new Error('set TOKENRADAR_BINARY to the tokenradar executable (ctest does)');

export const SIM_KEY = 'sk-sim-sdk-test';

const children = new Set();
const dirs = new Set();

after(async () => {
  await Promise.all([...children].map(stop));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

export function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tokenradar-sdk-'));
  dirs.add(dir);
  return dir;
}

// Spawns `tokenradar ...args` and resolves with the first http://127.0.0.1:PORT it prints.
export function start(args, env = {}) {
  const child = spawn(binary, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => fail(new Error('no URL within 10 s')), 10_000);
    const fail = (err) => {
      clearTimeout(timer);
      reject(new Error(`tokenradar ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
    };
    child.on('error', fail);
    child.on('exit', (code) => fail(new Error(`exited with ${code}`)));
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[0], child, stderr: () => stderr });
      }
    });
  });
}

function stop(child) {
  children.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.on('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

// The sim with the `instant` profile, requiring SIM_KEY in each API's header shape.
export function startSim(profile = 'instant') {
  return start(['sim', '--profile', profile, '--port', '0', '--api-key-env', 'TOKENRADAR_SDK_SIM_KEY'], {
    TOKENRADAR_SDK_SIM_KEY: SIM_KEY,
  });
}

// `tokenradar serve` on a free port in front of the sim at simUrl: model `fast` on its OpenAI
// dialect, `claude` on its Anthropic dialect and `gemini` on its Gemini dialect (both
// translated), and the cached twins of the first two
// `fast-cached` and `claude-cached` (exact cache; the keyless listener's one tenant may share
// answers); no client auth, a throwaway store.
export function startServe(simUrl) {
  const dir = tempDir();
  const config = join(dir, 'gateway.toml');
  writeFileSync(config, `
[auth]
mode = "none"
[cache]
keyless = true
[store]
path = "${join(dir, 'gateway.db')}"
[[providers]]
name = "sim-openai"
api = "openai"
base_url = "${simUrl}/v1"
key_env = "TOKENRADAR_SDK_SIM_KEY"
[[providers]]
name = "sim-anthropic"
api = "anthropic"
base_url = "${simUrl}"
key_env = "TOKENRADAR_SDK_SIM_KEY"
[[providers]]
name = "sim-gemini"
api = "gemini"
base_url = "${simUrl}"
key_env = "TOKENRADAR_SDK_SIM_KEY"
[[models]]
name = "fast"
upstreams = ["sim-openai/gpt-4o"]
[[models]]
name = "claude"
upstreams = ["sim-anthropic/claude-3-5-sonnet-latest"]
[[models]]
name = "gemini"
upstreams = ["sim-gemini/gemini-1.5-pro"]
[[models]]
name = "fast-cached"
upstreams = ["sim-openai/gpt-4o"]
cache = "exact"
[[models]]
name = "claude-cached"
upstreams = ["sim-anthropic/claude-3-5-sonnet-latest"]
cache = "exact"
`);
  return start(['serve', '--port', '0', '--config', config], { TOKENRADAR_SDK_SIM_KEY: SIM_KEY });
}

// The sim's own counters (requests seen, streams running).
export async function simStats(simUrl) {
  const r = await fetch(`${simUrl}/sim/stats`);
  return r.json();
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls until check() is true or the deadline passes; returns the last value of check().
export async function eventually(check, ms = 3_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await check();
    if (ok || Date.now() > deadline) return ok;
    await sleep(20);
  }
}
