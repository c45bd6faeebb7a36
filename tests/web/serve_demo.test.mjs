// `runnel serve` serves the demo page (web/) at / with COOP/COEP, and the model it
// serves at /models/<file> with Range support: the page loads it and chats with 2
// threads, the same text as runnel-llm in Node.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { loadModel } from '../../wasm/js/index.js';
import { model as modelPath, startServer, stopServer } from '../server/lib/server.mjs';
import { launchChromium } from './lib/browser.mjs';

test('runnel serve: demo page, model file with ranges, chat in Chromium', async () => {
  const server = await startServer(['-t', '1']);
  const browser = await launchChromium();
  try {
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
    assert.equal(await page.textContent('.msg.assistant'), expected);
  } finally {
    await browser.close();
    await stopServer(server);
  }
});
