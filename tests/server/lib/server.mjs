// Starts `runnel serve` on a free port for a test and stops it afterwards.
//   RUNNEL_BIN / RUNNEL_BINARY: the binary (default build-release/runnel)
//   RUNNEL_MODEL: the GGUF (default models/SmolLM2-135M-Instruct.Q4_1.gguf)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import OpenAI from 'openai';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const binary = process.env.RUNNEL_BIN ?? process.env.RUNNEL_BINARY ?? path.join(root, 'build-release/runnel');
// SmolLM2's end tokens (<|endoftext|>, <|im_end|>) as a logit_bias: banned where a test
// needs length.
export const kNoEnd = { 0: -100, 2: -100 };
export const model = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');

if (!existsSync(binary)) throw new Error(`no runnel binary at ${binary} (build it, or set RUNNEL_BIN)`);
if (!existsSync(model)) throw new Error(`no model at ${model} (run scripts/fetch_models.sh, or set RUNNEL_MODEL)`);

// Resolves to { url, port, child, stderr(), exited } once the server listens. `env`
// is added to this process's environment (RUNNEL_ISA, say); modelPath: another GGUF.
export function startServer(extraArgs = [], { timeoutMs = 60000, env = {}, modelPath = model } = {}) {
  const child = spawn(binary, ['serve', '-m', modelPath, '--port', '0', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`runnel serve did not start in ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = stderr.match(/listening on http:\/\/([\d.]+):(\d+)/);
      if (m && timer) {
        clearTimeout(timer);
        const port = Number(m[2]);
        resolve({ url: `http://127.0.0.1:${port}`, port, child, exited, stderr: () => stderr });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`runnel serve exited with ${code} before listening:\n${stderr}`));
    });
  });
}

// Runs `runnel serve` with exactly `args` (after -m) to its exit, for servers that are
// expected not to start. Resolves to { code, signal, stderr }.
export function runServe(args, { timeoutMs = 60000 } = {}) {
  const child = spawn(binary, ['serve', '-m', model, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, stderr });
  }));
}

// Resolves once `pattern` matches the server's stderr from offset `since` on (log lines
// come after the reply has been sent), or rejects with the stderr after timeoutMs.
export async function waitForStderr(server, pattern, { since = 0, timeoutMs = 10000 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const m = server.stderr().slice(since).match(pattern);
    if (m) return m;
    if (Date.now() - t0 > timeoutMs) throw new Error(`no ${pattern} in stderr:\n${server.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopServer(server) {
  if (server.child.exitCode !== null) return server.exited;
  server.child.kill('SIGTERM');
  return server.exited;
}

// Prometheus text -> { name or name{labels}: value }.
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return out;
}

// startServer plus the official client pointed at it (no retries: a failure shows at once).
export async function startServerWithClient(extraArgs = [], options = {}) {
  const server = await startServer(extraArgs, options);
  return { server, client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

// stopServer, failing unless the server exited with status 0 (its stderr as the message).
export async function stopServerCleanly(server) {
  const { code } = await stopServer(server);
  assert.equal(code, 0, server.stderr());
}
