// The demo page's "JSON mode" (web/) in headless Chromium, served as demo_page.test.mjs
// serves it (our static server, SmolLM2 at /models/<file>): with JSON mode on the
// reply is the one the same engine gives in Node with jsonSchema { type: 'object' },
// shown as a pretty-printed code block whose text parses as a JSON object; off, the
// next reply is Markdown again; a reload keeps each reply's format; a custom schema
// (here from the URL) constrains the reply, and a bad one shows runnel-llm's error.
// A screenshot is saved to $RUNNEL_ARTIFACTS (default build-web-artifacts/).
// Needs `npm run build` in wasm/ (web/runnel-llm/) and npm install in tests/web/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';
import { renderMarkdown } from '../../web/markdown.js';
import { launchChromium } from './lib/browser.mjs';
import { startServer } from './lib/static_server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');
const modelRoute = `/models/${path.basename(modelPath)}`;
const artifacts = process.env.RUNNEL_ARTIFACTS ?? path.join(root, 'build-web-artifacts');
const kQuestion = 'Name three colours of the rainbow.';
const kFollowUp = 'Now say it in one sentence.';
const kMaxTokens = 96; // SmolLM2's JSON object for kQuestion closes well before this
const kQuery = `autoload&temperature=0&maxTokens=${kMaxTokens}&context=1024`;
const kSchema = '{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}';

// What the same wasm engine answers in Node, with the page's parameters: `run` gets
// chat(messages, params) -> the reply's text (each a complete reply, not cut short).
async function inNode(run) {
  const model = await loadModel({ path: modelPath }, { contextSize: 1024 });
  try {
    return await run(async (messages, params = {}) => {
      const session = model.createSession();
      let text = '';
      for await (const p of session.chat(messages, { temperature: 0, maxTokens: kMaxTokens, ...params })) text += p;
      assert.equal(session.lastStats.finishReason, 'stop', `${JSON.stringify(params)}: ${text}`);
      await session.dispose();
      return text;
    });
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

async function send(page, text) {
  await page.fill('#prompt', text);
  await page.click('#send');
  await waitState(page, 'generating', 10_000).catch(() => {});
  await waitState(page, 'ready');
}

// Sends `text`; returns how the page shows the reply.
async function chat(page, text) {
  await send(page, text);
  const error = await page.textContent('#error');
  assert.equal(error, '', `page error: ${error}`);
  return lastReply(page);
}

// The last reply: its own text, format, HTML, and a JSON code block's text (or null).
const lastReply = (page) => page.$$eval('.msg.assistant', (els) => {
  const e = els.at(-1);
  return { text: e.dataset.text, format: e.dataset.format ?? null, html: e.innerHTML,
    code: e.querySelector(':scope > pre.json > code.language-json')?.textContent ?? null };
});

// Markdown's HTML for `text` as the page's DOM serializes it (' unescaped, ...).
const markdownHtml = (page, text) => page.evaluate((html) => {
  const div = document.createElement('div');
  div.innerHTML = html;
  return div.innerHTML;
}, renderMarkdown(text));

// A JSON-mode reply as the page must show it: one code block, the model's text
// (`expected` where given) pretty-printed, and that text parses as a JSON object.
function assertJsonReply(shown, expected = shown.text) {
  assert.equal(shown.text, expected);
  assert.equal(shown.format, 'json');
  assert.equal(shown.code, JSON.stringify(JSON.parse(expected), null, 2));
  const value = JSON.parse(shown.code);
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), shown.code);
  assert.doesNotMatch(shown.html, /<p>/);
  return value;
}

describe('demo page: JSON mode', () => {
  let browser;
  let server;
  let expected;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'web/runnel-llm/dist/runnel.wasm')),
      'web/runnel-llm is missing: run `npm run build` in wasm/');
    fs.mkdirSync(artifacts, { recursive: true });
    expected = await inNode(async (chat) => {
      const question = { role: 'user', content: kQuestion };
      const json = await chat([question], { jsonSchema: { type: 'object' } });
      const plain = await chat([question, { role: 'assistant', content: json }, { role: 'user', content: kFollowUp }]);
      const custom = await chat([question], { jsonSchema: kSchema });
      return { json, plain, custom };
    });
    server = await startServer({ routes: [{ prefix: '/', dir: path.join(root, 'web') }], files: { [modelRoute]: modelPath } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('JSON mode gives a JSON object as a code block; off, Markdown; a bad schema shows its error', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/?${kQuery}`);
      await waitState(page, 'ready');
      assert.equal(await page.isChecked('#json-mode'), false);
      assert.equal(await page.isVisible('#json-schema'), false);

      // On, with no schema typed: any JSON object.
      await page.check('#json-mode');
      assert.equal(await page.isVisible('#json-schema'), true);
      assertJsonReply(await chat(page, kQuestion), expected.json);

      // Off: the follow-up (the JSON reply in its history) is Markdown again.
      await page.uncheck('#json-mode');
      assert.equal(await page.isVisible('#json-schema'), false);
      const plain = await chat(page, kFollowUp);
      assert.equal(plain.text, expected.plain);
      assert.equal(plain.format, null);
      assert.equal(plain.html, await markdownHtml(page, expected.plain));
      assert.match(plain.html, /^<p>/);
      assert.throws(() => JSON.parse(expected.plain));

      // A later visit (JSON mode and its schema from the URL) shows each reply as it
      // was: the JSON one as a code block, the other as Markdown.
      await page.goto(`${server.url}/?${kQuery}&json&schema=${encodeURIComponent(kSchema)}`);
      await waitState(page, 'ready');
      assert.equal(await page.isChecked('#json-mode'), true);
      assert.equal(await page.inputValue('#json-schema'), kSchema);
      assert.equal(await page.isVisible('#json-schema'), true);
      const shown = await page.$$eval('.msg.assistant', (els) => els.map((e) => ({
        format: e.dataset.format ?? null, code: e.querySelector('pre.json > code')?.textContent ?? null, html: e.innerHTML })));
      assert.deepEqual(shown.map((m) => m.format), ['json', null]);
      assert.equal(shown[0].code, JSON.stringify(JSON.parse(expected.json), null, 2));
      assert.equal(shown[1].html, await markdownHtml(page, expected.plain));
      await page.screenshot({ path: path.join(artifacts, 'demo-json-mode.png'), fullPage: true });

      // The custom schema constrains the reply: an object with a string "name".
      await page.click('#new-chat');
      const value = assertJsonReply(await chat(page, kQuestion), expected.custom);
      assert.equal(typeof value.name, 'string');

      // A schema the engine refuses, and text that is not JSON: runnel-llm's message
      // on the page, which stays usable (cleared, the schema is any object again).
      for (const [schema, message] of [['{"type": "objec"}', /jsonSchema .*"objec" is not supported/],
        ['{"type": "object"', /jsonSchema: the schema is not valid JSON/]]) {
        await page.fill('#json-schema', schema);
        await send(page, 'x');
        assert.match(await page.textContent('#error'), message);
        assert.equal((await lastReply(page)).text, '');
      }
      await page.fill('#json-schema', '');
      assertJsonReply(await chat(page, kQuestion));
    } finally {
      await context.close();
    }
  });
});
