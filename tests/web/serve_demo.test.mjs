// `runnel serve` serves the demo page (web/) at / with COOP/COEP, and the model it
// serves at /models/<file> with Range support: the page loads it and chats with 2
// threads, the same text as runnel-llm in Node. A --web-root without the package
// (web/runnel-llm/ is a build output) gets a banner that says how to build it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';
import { model as modelPath, startServer, stopServer } from '../server/lib/server.mjs';
import { launchChromium } from './lib/browser.mjs';

test('runnel serve: demo page, model file with ranges, chat in Chromium', async () => {
  const server = await startServer(['-t', '1']);
  const browser = await launchChromium();
  try {
    assert.match(server.stderr(), /, demo page at \/\)\n/);
    const route = `/models/${path.basename(modelPath)}`;
    const index = await fetch(`${server.url}/`);
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(index.headers.get('cross-origin-embedder-policy'), 'require-corp');
    assert.match(await index.text(), /<title>runnel/);
    const part = await fetch(`${server.url}${route}`, { headers: { Range: 'bytes=0-3' } });
    assert.equal(part.status, 206);
    assert.equal(Buffer.from(await part.arrayBuffer()).toString('latin1'), 'GGUF');

    const model = await loadModel({ path: modelPath }, { contextSize: 1024 });
    let expected = '';
    for await (const p of model.createSession().chat([{ role: 'user', content: 'Hello! Who are you?' }],
      { temperature: 0, maxTokens: 16 })) expected += p;
    await model.dispose();

    const page = await browser.newPage();
    await page.goto(`${server.url}/?autoload&temperature=0&maxTokens=16&context=1024&threads=2`);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    assert.match(await page.textContent('#model-info'), /2 threads/);
    await page.fill('#prompt', 'Hello! Who are you?');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelector('.msg.assistant')?.textContent.length > 0 &&
      document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    assert.equal(await page.textContent('#error'), '');
    assert.equal(await page.$eval('.msg.assistant', (e) => e.dataset.text), expected);
  } finally {
    await browser.close();
    await stopServer(server);
  }
});

test('runnel serve --web-root without runnel-llm/: the banner and the page say how to build it', async () => {
  const web = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-web-root-'));
  for (const f of fs.readdirSync(web)) {
    if (f !== 'runnel-llm') fs.cpSync(path.join(web, f), path.join(dir, f), { recursive: true });
  }
  const server = await startServer(['-t', '1', '--web-root', dir]);
  const browser = await launchChromium();
  try {
    assert.match(server.stderr().split('\n')[0],
      /^runnel serve: listening on .*, demo page at \/ without its package: build it with \(cd wasm && npm run build\)\)$/);
    const page = await browser.newPage();
    await page.goto(`${server.url}/?autoload`);
    await page.waitForFunction(() => document.body.dataset.state === 'unavailable', null, { timeout: 30_000 });
    assert.match(await page.textContent('#error'), /did not load[^]*\(cd wasm && npm run build\)/);
  } finally {
    await browser.close();
    await stopServer(server);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
