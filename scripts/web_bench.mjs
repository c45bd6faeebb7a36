#!/usr/bin/env node
// Web speed side by side: runnel-llm (wasm SIMD128) and wllama (llama.cpp in wasm, npm
// @wllama/wllama) in the same headless Chromium, same GGUF, same text prompt (about 128
// tokens) and 32 generated tokens, at 1 and 2 threads (the page is cross-origin
// isolated, so both may use threads). Prints each engine's prompt and generation tok/s
// (medians over --runs, runs interleaved; wllama gets a fresh page per run), the ratio runnel/wllama, and native runnel
// at 1 thread (`runnel bench`) for the web/native ratio.
//
//   node scripts/web_bench.mjs [--models a.gguf,b.gguf] [--threads 1,2] [--runs 3]
// Defaults: SmolLM2 and models/bench/llama-1b-{q4_0,q4_k_m}.gguf (scripts/gen_bench_models.sh).
// Needs: npm run build in wasm/ (web/runnel-llm), npm install in tests/web, build-release/runnel.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchPersistentChromium } from '../tests/web/lib/browser.mjs';
import { startServer } from '../tests/web/lib/static_server.mjs';
import { median, parseCli, positiveInt, positiveIntList } from './lib/cli.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const usage = 'usage: node scripts/web_bench.mjs [--models a.gguf,b.gguf] [--threads 1,2] [--runs 3]';
const opts = parseCli('web_bench', usage, {
  models: { type: 'string', default: ['models/SmolLM2-135M-Instruct.Q4_1.gguf',
    'models/bench/llama-1b-q4_0.gguf', 'models/bench/llama-1b-q4_k_m.gguf'].join(',') },
  threads: { type: 'string', default: '1,2' },
  runs: { type: 'string', default: '3' },
});
const models = opts.models.split(',').map((m) => path.resolve(root, m));
const threadList = positiveIntList('web_bench', usage, '--threads', opts.threads);
const runs = positiveInt('web_bench', usage, '--runs', opts.runs);
const nGen = 32;
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, 'build-release/runnel');

for (const m of models) if (!fs.existsSync(m)) throw new Error(`no model ${m} (scripts/gen_bench_models.sh 1b q4_0 q4_k_m)`);
if (!fs.existsSync(path.join(root, 'web/runnel-llm/dist/runnel.wasm'))) throw new Error('run `npm run build` in wasm/ first');

// A text prompt of about 128 tokens for every model here (they share SmolLM2's tokenizer).
const prompt = ('The history of the city begins with a small settlement on the river, where traders ' +
  'met to exchange grain, salt and cloth. Over the centuries the town grew, walls were built and torn ' +
  'down, bridges crossed the water and markets filled the squares. Scholars came to study, artists to ' +
  'paint the light on the old stones, and travellers wrote long letters home about the food, the music ' +
  'and the people they met along the narrow streets. Today the city is known for its museums, its parks ' +
  'and its cafes, and the river still carries boats loaded with goods from the hills down to the sea, ' +
  'as it did long ago, and visitors arrive to see').trim();

const files = {};
for (const m of models) files[`/models/${path.basename(m)}`] = m;
const server = await startServer({
  isolate: true,
  routes: [
    { prefix: '/runnel-llm/', dir: path.join(root, 'web/runnel-llm') },
    { prefix: '/wllama/', dir: path.join(root, 'tests/web/node_modules/@wllama/wllama') },
    { prefix: '/', dir: path.join(root, 'scripts/web_bench') },
  ],
  files,
});
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-web-bench-'));
const browser = await launchPersistentChromium(profile); // OPFS on disk: room for 1B models
const rows = [];
try {
  for (const model of models) {
    const url = `${server.url}/models/${path.basename(model)}`;
    let native = null;
    try {
      const out = execFileSync(runnelBin, ['bench', '-m', model, '-p', '128', '-n', String(nGen), '-t', '1',
        '-r', String(runs), '-o', 'jsonl'], { encoding: 'utf8' });
      native = {};
      for (const line of out.trim().split('\n')) {
        const j = JSON.parse(line);
        native[j.n_prompt > 0 ? 'pp' : 'tg'] = j.avg_ts;
      }
    } catch (e) {
      console.error(`native runnel bench failed: ${e.message}`);
    }
    for (const threads of threadList) {
      const openPage = async () => {
        const page = await browser.newPage();
        page.on('pageerror', (e) => console.error('page error:', e.message));
        // The worker's errors (a failed model read, out of memory) reach only the console.
        page.on('console', (m) => m.type() === 'error' && console.error('console:', m.text().slice(0, 300)));
        await page.goto(`${server.url}/index.html`);
        await page.waitForFunction(() => window.benchReady === true);
        return page;
      };
      const got = { runnel: { pp: [], tg: [] }, wllama: { pp: [], tg: [] } };
      const loaded = {};
      // runnel: one page, one load, a warm-up, then the runs.
      const runnelPage = await openPage();
      loaded.runnel = await runnelPage.evaluate(([u, t]) => window.bench.load('runnel', u, t, 512), [url, threads]);
      await runnelPage.evaluate(() => window.bench.run('runnel', 'Hello there', 2)); // warm-up
      // Runs start on a quiet machine: closing a page (its worker, its memory) takes the
      // CPU for a moment on this 2-core VM, and the next run must not overlap it.
      const settle = () => new Promise((resolve) => setTimeout(resolve, 2000));
      for (let r = 0; r < runs; ++r) {
        await settle();
        const res = await runnelPage.evaluate(([p, n]) => window.bench.run('runnel', p, n), [prompt, nGen]);
        got.runnel.pp.push(res.pp);
        got.runnel.tg.push(res.tg);
        got.runnel.nPrompt = res.nPrompt;
        // wllama gets a fresh page and load per run (from its cache; load time is
        // outside its timings): one failed call ("Invalid typed array length", e.g.
        // on invalid UTF-8 output) leaves its worker unusable, and this keeps runs
        // independent.
        const wPage = await openPage();
        loaded.wllama = await wPage.evaluate(([u, t]) => window.bench.load('wllama', u, t, 512), [url, threads]);
        await settle();
        const w = await wPage.evaluate(([p, n]) => window.bench.run('wllama', p, n), [prompt, nGen]);
        got.wllama.pp.push(w.pp);
        got.wllama.tg.push(w.tg);
        got.wllama.nPrompt = w.nPrompt;
        got.wllama.nGen = w.nGen;
        await wPage.evaluate(() => window.bench.unload('wllama'));
        await wPage.close();
      }
      await runnelPage.evaluate(() => window.bench.unload('runnel'));
      await runnelPage.close();
      const row = {
        model: path.basename(model), threads,
        runnelThreads: loaded.runnel.threads, wllamaThreads: loaded.wllama.threads,
        nPrompt: got.runnel.nPrompt, wllamaPrompt: got.wllama.nPrompt,
        runnel: { pp: median(got.runnel.pp), tg: median(got.runnel.tg) },
        wllama: { pp: median(got.wllama.pp), tg: median(got.wllama.tg) },
        native,
      };
      rows.push(row);
      console.error(JSON.stringify(row));
    }
  }
} finally {
  await browser.close();
  await server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}

const f = (x) => (x == null ? 'n/a' : x.toFixed(2));
console.log(`\nrunnel-llm vs wllama ${JSON.parse(fs.readFileSync(path.join(root, 'tests/web/node_modules/@wllama/wllama/package.json'))).version} ` +
  `in Chromium (headless, COOP/COEP), prompt ~${rows[0]?.nPrompt} tokens, ${nGen} generated, medians of ${runs} interleaved runs\n`);
console.log('| model | threads | test | runnel t/s | wllama t/s | ratio | native runnel 1t t/s | web/native |');
console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  for (const test of ['pp', 'tg']) {
    const ratio = r.runnel[test] / r.wllama[test];
    const nat = r.native?.[test];
    console.log(`| ${r.model} | ${r.threads} (runnel ${r.runnelThreads}, wllama ${r.wllamaThreads}) | ${test} | ` +
      `${f(r.runnel[test])} | ${f(r.wllama[test])} | ${ratio.toFixed(2)}x | ${f(nat)} | ` +
      `${r.threads === 1 && nat ? (nat / r.runnel[test]).toFixed(2) + 'x slower' : ''} |`);
  }
}
