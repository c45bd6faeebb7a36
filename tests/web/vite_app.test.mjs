// The npm package as a web developer gets it: `npm pack` in wasm/, the tarball
// installed into a small Vite app (tests/web/vite-app, copied to a temporary folder),
// `vite build`, and the built app run in headless Chromium, where it loads the model
// and streams the same greedy text as runnel-llm in Node.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { build } from 'vite';

import { loadModel } from '../../wasm/js/index.js';
import { launchChromium } from './lib/browser.mjs';
import { startServer } from './lib/static_server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');

test('npm pack -> Vite app -> Chromium', async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-vite-'));
  const browser = await launchChromium();
  let server;
  try {
    // npm pack, then install the tarball (no registry needed: it has no dependencies).
    const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', work],
      { cwd: path.join(root, 'wasm'), encoding: 'utf8' }).trim().split('\n').pop();
    const app = path.join(work, 'app');
    fs.cpSync(path.join(here, 'vite-app'), app, { recursive: true });
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', path.join(work, tarball)],
      { cwd: app, stdio: 'inherit' });
    const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules/runnel-llm/package.json'), 'utf8'));
    assert.equal(installed.name, 'runnel-llm');
    assert.ok(fs.existsSync(path.join(app, 'node_modules/runnel-llm/index.d.ts')));

    await build({ root: app, configFile: path.join(app, 'vite.config.js'), build: { outDir: path.join(app, 'dist') } });
    const assets = fs.readdirSync(path.join(app, 'dist/assets'));
    assert.ok(assets.some((f) => f.endsWith('.wasm')), `no .wasm among ${assets}`);

    const model = await loadModel({ path: modelPath }, { contextSize: 512 });
    let expected = '';
    for await (const p of model.createSession().generate('The capital of France is', { temperature: 0, maxTokens: 16 })) {
      expected += p;
    }
    await model.dispose();

    server = await startServer({ routes: [{ prefix: '/', dir: path.join(app, 'dist') }],
      files: { '/model.gguf': modelPath } });
    const page = await browser.newPage();
    await page.goto(`${server.url}/?model=/model.gguf`);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 120_000 });
    const text = await page.textContent('#out');
    assert.equal(await page.getAttribute('body', 'data-state'), 'done', text);
    // Chromium runs relaxed SIMD, so the relaxed kernel table is the default there.
    assert.equal(await page.getAttribute('body', 'data-simd'), 'simd128-relaxed');
    assert.equal(text, expected);
  } finally {
    await browser.close();
    await server?.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
