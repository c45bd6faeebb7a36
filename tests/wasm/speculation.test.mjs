// runnel-llm's lookupNgram option (speculative decoding by prompt lookup) with the real
// SmolLM2 in Node: greedy text the same as without it, drafts checked and accepted, and
// a model loaded with draftMax 0 refusing it by name.
//   RUNNEL_MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');

async function collect(iterable) {
  let text = '';
  for await (const piece of iterable) text += piece;
  return text;
}

const paragraph = 'The river flows through the old town, past the market square and the stone bridge ' +
  'where the fishermen sell their catch every morning.';

describe('runnel-llm prompt lookup', () => {
  let model;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'wasm/dist/runnel.wasm')), 'wasm/dist is missing: run `npm run build` in wasm/');
    model = await loadModel({ path: modelPath }, { contextSize: 512 });
  });
  after(async () => model?.dispose());

  test('greedy chat: the same text with lookupNgram, with drafts accepted', async () => {
    const session = model.createSession();
    const messages = [{ role: 'user', content: `Repeat this text exactly, word for word: ${paragraph}` }];
    const plain = await collect(session.chat(messages, { maxTokens: 60, temperature: 0 }));
    assert.equal(session.lastStats.draftTokens, 0);
    const fast = await collect(session.chat(messages, { maxTokens: 60, temperature: 0, lookupNgram: 3 }));
    assert.equal(fast, plain);
    assert.ok(session.lastStats.draftTokens > 0);
    assert.ok(session.lastStats.draftTokensAccepted > 0);
    await session.dispose();
  });

  test('bad values and a model without draft rows are clear errors', async () => {
    const session = model.createSession();
    await assert.rejects(collect(session.generate('x', { lookupNgram: 17 })), /lookupNgram must be in \[0, 16\]/);
    await assert.rejects(collect(session.generate('x', { lookupNgram: 'yes' })), /lookupNgram must be a finite number/);
    await session.dispose();
    const none = await loadModel({ path: modelPath }, { contextSize: 256, draftMax: 0 });
    const s = none.createSession();
    await assert.rejects(collect(s.generate('x', { lookupNgram: 2, maxTokens: 8 })), /prompt lookup needs an engine with a draft length/);
    await none.dispose();
  });
});
