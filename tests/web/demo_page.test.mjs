// The demo page (web/) in headless Chromium, served on 127.0.0.1 by our static server
// (tests/web/lib/static_server.mjs) with the model at /models/<file>, as runnel serve
// does: first visit downloads with progress into OPFS and chats; a second visit loads
// from OPFS with no request for the model; an interrupted download resumes with a
// Range request; a memoryBudget below the model streams layers and gives the same
// reply; with COOP/COEP the pthreads build runs 2 threads, same reply, and a K-quant
// model's relaxed-SIMD products in its workers give the SIMD128 text. A screenshot
// of the chat is saved to $RUNNEL_ARTIFACTS (default build-web-artifacts/).
// Needs `npm run build` in wasm/ (web/runnel-llm/) and npm install in tests/web/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';
import { launchChromium } from './lib/browser.mjs';
import { startServer } from './lib/static_server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');
const modelRoute = `/models/${path.basename(modelPath)}`;
const kTinyRoute = '/models/tiny-q4_k_m.gguf';
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, 'build-release/runnel');
const artifacts = process.env.RUNNEL_ARTIFACTS ?? path.join(root, 'build-web-artifacts');
const kQuestion = 'Name three colours of the rainbow.';
const kQuery = 'autoload&temperature=0&maxTokens=24&context=1024';

// What the same wasm engine answers in Node: the page must show exactly this.
async function nodeReply(options = {}, messages = [{ role: 'user', content: kQuestion }]) {
  const model = await loadModel({ path: modelPath }, { contextSize: 1024, ...options });
  try {
    let text = '';
    for await (const p of model.createSession().chat(messages, { temperature: 0, maxTokens: 24 })) text += p;
    return text;
  } finally {
    await model.dispose();
  }
}

async function waitState(page, state, timeout = 120_000) {
  try {
    await page.waitForFunction((s) => document.body.dataset.state === s, state, { timeout });
  } catch (e) {
    const shown = await page.evaluate(() => `state ${document.body.dataset.state}, error: ${document.getElementById('error').textContent}`);
    throw new Error(`waiting for state ${state}: ${e.message}; ${shown}`);
  }
}

// Sends kQuestion; returns the reply's text (data-text: the page shows it as Markdown).
async function chat(page) {
  await page.fill('#prompt', kQuestion);
  await page.click('#send');
  await waitState(page, 'generating', 10_000).catch(() => {});
  await waitState(page, 'ready');
  const error = await page.textContent('#error');
  assert.equal(error, '', `page error: ${error}`);
  return page.$$eval('.msg.assistant', (els) => els.at(-1).dataset.text);
}

// The conversation on the page: [[role, text], ...].
const shownConversation = (page) =>
  page.$$eval('.msg', (els) => els.map((e) => [e.classList.contains('user') ? 'user' : 'assistant', e.dataset.text]));

const modelRequests = (server) => server.log.filter((r) => r.path === modelRoute);

describe('demo page in Chromium', () => {
  let browser;
  let server;
  let expected;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'web/runnel-llm/dist/runnel.wasm')),
      'web/runnel-llm is missing: run `npm run build` in wasm/');
    fs.mkdirSync(artifacts, { recursive: true });
    expected = await nodeReply();
    server = await startServer({ routes: [{ prefix: '/', dir: path.join(root, 'web') }], files: { [modelRoute]: modelPath } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('first visit downloads with progress and chats; second visit loads from OPFS', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const progress = [];
      await page.exposeFunction('reportProgress', (p) => progress.push(p));
      // Two threads asked for (on a 1-vCPU host the default is one, with another note).
      await page.goto(`${server.url}/?${kQuery}&threads=2`);
      await waitState(page, 'ready');
      assert.equal(await page.getAttribute('body', 'data-cached'), 'false');
      const first = modelRequests(server);
      assert.equal(first.length, 1, JSON.stringify(first));
      assert.equal(first[0].status, 200);
      assert.match(await page.textContent('#model-info'), /30 layers.*simd128-relaxed/);
      assert.match(await page.textContent('#model-info'), /1 thread \(the page is not cross-origin isolated/);
      const reply = await chat(page);
      assert.equal(reply, expected);
      assert.match(await page.textContent('#speed'), /tok\/s/);
      await page.screenshot({ path: path.join(artifacts, 'demo-chat.png'), fullPage: true });
      assert.match(await page.textContent('#cached-list'), new RegExp(path.basename(modelPath)));

      // Second visit (the tab reloaded): the weights come from OPFS; no request for
      // the model at all. The conversation is still there; "New chat" starts afresh.
      server.log.length = 0;
      await page.close();
      const again = await context.newPage();
      await again.goto(`${server.url}/?${kQuery}`);
      await waitState(again, 'ready');
      assert.equal(await again.getAttribute('body', 'data-cached'), 'true');
      assert.deepEqual(modelRequests(server), []);
      assert.deepEqual(await shownConversation(again), [['user', kQuestion], ['assistant', expected]]);
      await again.click('#new-chat');
      assert.deepEqual(await shownConversation(again), []);
      assert.equal(await chat(again), expected);
      // A second tab while the first holds the OPFS file open: still no download.
      const third = await context.newPage();
      await third.goto(`${server.url}/?${kQuery}`);
      await waitState(third, 'ready');
      assert.deepEqual(modelRequests(server), []);
    } finally {
      await context.close();
    }
  });

  test('an interrupted download resumes with a Range request', async () => {
    const context = await browser.newContext(); // a fresh origin storage
    try {
      const page = await context.newPage();
      server.log.length = 0;
      server.cutNextDownload(modelRoute, 40 << 20);
      await page.goto(`${server.url}/?${kQuery}`);
      await waitState(page, 'idle');
      assert.match(await page.textContent('#error'), /download|network|fetch|body/i);
      // The page lists the cache after it reports the error (refreshCache is async).
      await page.waitForFunction(() => /partial/.test(document.querySelector('#cached-list')?.textContent ?? ''),
        null, { timeout: 10_000 }).catch(() => {});
      assert.match(await page.textContent('#cached-list'), /partial/);
      await page.click('#load');
      await waitState(page, 'ready');
      const reqs = modelRequests(server);
      assert.equal(reqs.length, 2, JSON.stringify(reqs));
      assert.equal(reqs[0].cut, true);
      assert.match(reqs[1].range ?? '', /^bytes=\d+-$/);
      assert.ok(Number(/\d+/.exec(reqs[1].range)[0]) > 0, reqs[1].range);
      assert.equal(reqs[1].status, 206);
      assert.equal(await chat(page), expected);
    } finally {
      await context.close();
    }
  });

  test('sha256: a mismatch is a clear error and the file is never used; the right hash loads', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/`);
      const url = `${server.url}${modelRoute}`;
      const wrong = await page.evaluate(async (u) => {
        const { loadModel, listCachedModels } = await import('/runnel-llm/js/index.js');
        try {
          await loadModel({ url: u }, { sha256: '0'.repeat(64) });
          return { error: null };
        } catch (e) {
          return { error: e.message, cached: await listCachedModels() };
        }
      }, url);
      assert.match(wrong.error ?? '', /sha256 [0-9a-f]{64} does not match/);
      assert.ok(wrong.cached.every((m) => !m.complete), JSON.stringify(wrong.cached));
      const { createHash } = await import('node:crypto');
      const sha = createHash('sha256').update(fs.readFileSync(modelPath)).digest('hex');
      const right = await page.evaluate(async ([u, h]) => {
        const { loadModel, listCachedModels } = await import('/runnel-llm/js/index.js');
        const model = await loadModel({ url: u }, { sha256: h });
        const layers = model.info.nLayer;
        await model.dispose();
        return { layers, cached: await listCachedModels() };
      }, [url, sha]);
      assert.equal(right.layers, 30);
      assert.equal(right.cached.find((m) => m.url === url)?.sha256, sha);
    } finally {
      await context.close();
    }
  });

  test('a local file loads without any download; the stop button ends a reply', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      server.log.length = 0;
      await page.goto(`${server.url}/?temperature=0&maxTokens=400&context=1024`);
      await page.check('input[name="source"][value="file"]');
      await page.setInputFiles('#model-file', modelPath);
      await page.click('#load');
      await waitState(page, 'ready');
      assert.deepEqual(modelRequests(server), []);
      await page.fill('#prompt', 'Write a long story about a dragon.');
      await page.click('#send');
      await page.waitForFunction(() => (document.querySelector('.msg.assistant')?.textContent.length ?? 0) > 20,
        null, { timeout: 60_000 });
      await page.click('#stop');
      await waitState(page, 'ready');
      assert.match(await page.textContent('#speed'), /\(abort\)/);
    } finally {
      await context.close();
    }
  });

  // Gemma 3 270M (gemma3, K-quants, a 262k vocabulary) from a local file. Its GGUF
  // carries no chat template: runnel renders Gemma's built-in one. This file is the base
  // (not instruction-tuned) model, so its greedy reply repeats the question
  // (llama.cpp's greedy reply to the same rendered prompt starts the same way); the
  // page must show exactly what the same engine answers in Node.
  const gemmaPath = path.join(root, 'models/gemma-3-270m-q4_k_m.gguf');
  test('Gemma 3 270M from a local file chats through its built-in template', {
    skip: !fs.existsSync(gemmaPath) && `no ${gemmaPath} (scripts/setup.sh --tests or scripts/fetch_models.sh gemma3)`,
  }, async () => {
    const messages = [{ role: 'user', content: kQuestion }];
    const node = await loadModel({ path: gemmaPath }, { contextSize: 1024 });
    let want = '';
    try {
      assert.equal(node.info.architecture, 'gemma3');
      assert.equal(node.info.chatTemplate, true);
      assert.ok((await node.applyChatTemplate(messages)).endsWith(
        `<start_of_turn>user\n${kQuestion}<end_of_turn>\n<start_of_turn>model\n`));
      for await (const p of node.createSession().chat(messages, { temperature: 0, maxTokens: 24 })) want += p;
    } finally {
      await node.dispose();
    }
    assert.ok(want.trim().length > 0);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      server.log.length = 0;
      await page.goto(`${server.url}/?temperature=0&maxTokens=24&context=1024`);
      await page.check('input[name="source"][value="file"]');
      await page.setInputFiles('#model-file', gemmaPath);
      await page.click('#load');
      await waitState(page, 'ready');
      assert.deepEqual(server.log.filter((r) => r.path.startsWith('/models/')), []);
      assert.match(await page.textContent('#model-info'), /Gemma 3 270m: 18 layers.*simd128-relaxed/);
      assert.equal(await chat(page), want);
      await page.screenshot({ path: path.join(artifacts, 'demo-gemma.png'), fullPage: true });
    } finally {
      await context.close();
    }
  });

  test('a memoryBudget below the model size streams layers and gives the same reply', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      // Below the model's size but well above what streaming needs: the embeddings and
      // output stay, plus one layer, scratch and a KV cache kept small by a short
      // context (the reply is 24 tokens), so the plan's details leave a wide margin.
      const budgetMiB = Math.floor((fs.statSync(modelPath).size * 0.85) / 2 ** 20);
      await page.goto(`${server.url}/?${kQuery.replace('context=1024', 'context=256')}&budget=${budgetMiB}`);
      await waitState(page, 'ready');
      assert.match(await page.textContent('#model-info'), /streaming layers/);
      assert.equal(await chat(page), expected);
    } finally {
      await context.close();
    }
  });
});

describe('demo page: controls, Markdown, conversation, missing package', () => {
  let browser;
  let server;
  before(async () => {
    server = await startServer({ routes: [{ prefix: '/', dir: path.join(root, 'web') }], files: { [modelRoute]: modelPath } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('temperature and system prompt controls (URL parameters as defaults); the chat survives a reload', async () => {
    const system = 'You answer in Markdown, with a bulleted list.';
    const expected = await nodeReply({}, [{ role: 'system', content: system }, { role: 'user', content: kQuestion }]);
    assert.notEqual(expected, await nodeReply(), 'the system prompt changes the reply');
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/?${kQuery.replace('temperature=0', 'temperature=1.3')}&system=${encodeURIComponent('Be brief.')}`);
      assert.equal(await page.inputValue('#temperature'), '1.3');
      assert.equal(await page.inputValue('#system-prompt'), 'Be brief.');
      await waitState(page, 'ready');
      // The controls, not the URL, decide: greedy, with this system prompt.
      await page.fill('#temperature', '0');
      await page.fill('#system-prompt', system);
      assert.equal(await chat(page), expected);
      // A temperature the engine refuses is reported on the page.
      await page.fill('#temperature', '-1');
      await page.fill('#prompt', 'x');
      await page.click('#send');
      await page.waitForFunction(() => /temperature/.test(document.getElementById('error').textContent), null,
        { timeout: 30_000 });
      await waitState(page, 'ready');
      // After a reload the conversation is back (the failed turn too, with an empty reply).
      await page.reload();
      await waitState(page, 'ready');
      assert.deepEqual(await shownConversation(page),
        [['user', kQuestion], ['assistant', expected], ['user', 'x'], ['assistant', '']]);
      await page.click('#new-chat');
      await page.reload();
      await waitState(page, 'ready');
      assert.deepEqual(await shownConversation(page), []);
    } finally {
      await context.close();
    }
  });

  test('replies render as Markdown; the model\'s text never becomes markup', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/`);
      const reply = '## Colours\nThe **three** are *red*, `green` and:\n\n- blue\n- <img src=x onerror="window.pwned = 1">\n\n' +
        '1. first\n2. <script>window.pwned = 2</script>\n\n```js\nconst a = "<b>not bold</b>";\n```';
      // A conversation saved by an earlier visit, as the page stores it.
      await page.evaluate((r) => localStorage.setItem('runnel-demo-conversation', JSON.stringify({
        messages: [{ role: 'user', content: '<i>hi</i> **there**' }, { role: 'assistant', content: r }],
      })), reply);
      await page.reload();
      await page.waitForFunction(() => document.querySelectorAll('.msg').length === 2);
      const shown = await page.$eval('.msg.assistant', (e) => ({
        h2: e.querySelector('h2')?.textContent,
        strong: e.querySelector('p strong')?.textContent,
        em: e.querySelector('p em')?.textContent,
        code: e.querySelector('p code')?.textContent,
        ul: [...e.querySelectorAll('ul > li')].map((li) => li.textContent),
        ol: [...e.querySelectorAll('ol > li')].map((li) => li.textContent),
        pre: e.querySelector('pre > code.language-js')?.textContent,
        elements: [...e.querySelectorAll('*')].map((x) => x.tagName.toLowerCase()),
        text: e.dataset.text,
      }));
      assert.equal(shown.h2, 'Colours');
      assert.equal(shown.strong, 'three');
      assert.equal(shown.em, 'red');
      assert.equal(shown.code, 'green');
      assert.deepEqual(shown.ul, ['blue', '<img src=x onerror="window.pwned = 1">']);
      assert.deepEqual(shown.ol, ['first', '<script>window.pwned = 2</script>']);
      assert.equal(shown.pre, 'const a = "<b>not bold</b>";');
      assert.deepEqual([...new Set(shown.elements)].sort(), ['code', 'em', 'h2', 'li', 'ol', 'p', 'pre', 'strong', 'ul']);
      assert.equal(shown.text, reply);
      // The user's message is plain text.
      assert.equal(await page.$eval('.msg.user', (e) => e.children.length), 0);
      assert.equal(await page.textContent('.msg.user'), '<i>hi</i> **there**');
      await page.waitForTimeout(200); // an <img onerror> would have run by now
      assert.equal(await page.evaluate(() => window.pwned), undefined);
    } finally {
      await context.close();
    }
  });

  test('model.embed through the Worker gives the vectors Node gives', async () => {
    const texts = ['The cat sat on the mat.', 'Quarterly revenue grew by 4 percent.'];
    const model = await loadModel({ path: modelPath }, { contextSize: 256 });
    const inNode = (await model.embed(texts)).map((v) => Array.from(v));
    await model.dispose();
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/`);
      const inPage = await page.evaluate(async ([url, t]) => {
        const { loadModel } = await import('/runnel-llm/js/index.js');
        const m = await loadModel({ url }, { cache: false, contextSize: 256 });
        const vectors = await m.embed(t);
        const one = await m.embed(t[0]);
        await m.dispose();
        return { vectors: vectors.map((v) => [v.constructor.name, Array.from(v)]), one: one.constructor.name, simd: m.info.simd };
      }, [`${server.url}${modelRoute}`, texts]);
      assert.equal(inPage.one, 'Float32Array');
      assert.deepEqual(inPage.vectors.map(([type]) => type), ['Float32Array', 'Float32Array']);
      // The relaxed-SIMD and SIMD128 sets give the same bits, so whichever Node runs.
      assert.equal(inPage.simd, 'simd128-relaxed');
      assert.deepEqual(inPage.vectors.map(([, v]) => v), inNode);
    } finally {
      await page.close();
    }
  });

  test('a copy of the page without runnel-llm/ says how to build it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-web-'));
    for (const f of fs.readdirSync(path.join(root, 'web'))) {
      if (f !== 'runnel-llm') fs.cpSync(path.join(root, 'web', f), path.join(dir, f), { recursive: true });
    }
    const bare = await startServer({ routes: [{ prefix: '/', dir }] });
    const page = await browser.newPage();
    try {
      await page.goto(`${bare.url}/?autoload`);
      await waitState(page, 'unavailable', 30_000);
      const error = await page.textContent('#error');
      assert.match(error, /runnel-llm package did not load/);
      assert.match(error, /\(cd wasm && npm run build\)/);
      // The rest of the page is there: the threads list is filled, loading is off.
      assert.ok((await page.$$('#threads option')).length >= 1);
      assert.equal(await page.isDisabled('#load'), true);
    } finally {
      await page.close();
      await bare.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('demo page, cross-origin isolated', () => {
  test('COOP/COEP: the pthreads build runs 2 threads with the same reply', async () => {
    const expected = await nodeReply();
    // A tiny synthetic Q4_K_M model (random weights: the text is noise, but deterministic).
    const tinyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-tiny-'));
    const tinyPath = path.join(tinyDir, 'tiny-q4_k_m.gguf');
    execFileSync(runnelBin, ['synth-model', '--shape', 'tiny', '--type', 'q4_k_m', '--tokenizer-from', modelPath,
      '-o', tinyPath], { stdio: 'ignore' });
    const server = await startServer({ routes: [{ prefix: '/', dir: path.join(root, 'web') }],
      files: { [modelRoute]: modelPath, [kTinyRoute]: tinyPath }, isolate: true });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      page.on('console', (m) => m.type() === 'error' && console.log('page:', m.text()));
      // As on a 1-vCPU runner: the cores cap only the default, ?threads=2 is honoured.
      await page.addInitScript(() => Object.defineProperty(navigator, 'hardwareConcurrency', { get: () => 1 }));
      await page.goto(`${server.url}/?${kQuery}&threads=2`);
      await waitState(page, 'ready');
      assert.equal(await page.evaluate(() => crossOriginIsolated), true);
      assert.match(await page.textContent('#model-info'), /2 threads/);
      assert.equal(await chat(page), expected);
      // Errors keep their message in the pthreads build too (its C++ exceptions are
      // Emscripten's JavaScript-based ones: with native wasm exceptions a catch by type
      // never matched there).
      const error = await page.evaluate(async (url) => {
        const { loadModel } = await import('./runnel-llm/js/index.js');
        try {
          await loadModel({ url }, { threads: 2, memoryBudget: 1 << 20 });
          return 'loaded';
        } catch (e) {
          return e.message;
        }
      }, `${server.url}${modelRoute}`);
      assert.match(error, /does not fit memoryBudget 1\.0 MiB/);
      // A K-quant model on 2 threads: the relaxed-SIMD Q4_K / Q6_K products run in the
      // pool's workers too (each installs the kernel module in its own function table)
      // and give the single-threaded SIMD128 text.
      const runs = await page.evaluate(async (url) => {
        const { loadModel } = await import('./runnel-llm/js/index.js');
        const generate = async (options) => {
          const model = await loadModel({ url }, { ...options, cache: false, contextSize: 256 });
          let text = '';
          for await (const p of model.createSession().generate('The capital of France is',
            { temperature: 0, maxTokens: 24 })) text += p;
          const { simd, threads } = model.info;
          await model.dispose();
          return { text, simd, threads };
        };
        return [await generate({ threads: 2 }), await generate({ threads: 1, isa: 'simd128' })];
      }, `${server.url}${kTinyRoute}`);
      assert.deepEqual(runs.map((r) => [r.simd, r.threads]), [['simd128-relaxed', 2], ['simd128', 1]]);
      assert.ok(runs[0].text.length > 0);
      assert.equal(runs[0].text, runs[1].text);
    } finally {
      await browser.close();
      await server.close();
      fs.rmSync(tinyDir, { recursive: true, force: true });
    }
  });
});
