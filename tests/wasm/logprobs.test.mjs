// runnel-llm's logprobs / topLogprobs options with the real SmolLM2 in Node: each token's
// figure is the log-softmax of the model's logits at that position, checked against
// evalLogits over the prompt and the generated tokens; the tokens spell the text; greedy
// picks the top alternative; bad values are clear errors.
//   RUNNEL_MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');
const kNoEnd = { 0: -100, 2: -100 };  // SmolLM2's end tokens

async function collect(iterable) {
  let text = '';
  for await (const piece of iterable) text += piece;
  return text;
}

function logSoftmax(row, id) {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  return row[id] - max - Math.log(sum);
}

describe('runnel-llm logprobs', () => {
  let model;
  let session;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'wasm/dist/runnel.wasm')), 'wasm/dist is missing: run `npm run build` in wasm/');
    model = await loadModel({ path: modelPath }, { contextSize: 256, allLogits: true });
    session = await model.createSession();
  });
  after(async () => model?.dispose());

  test('sampled: the figures are the log-softmax of the logits at each position', async () => {
    const prompt = 'The sea is';
    const text = await collect(session.generate(prompt, {
      maxTokens: 10, temperature: 1.2, seed: 9, logitBias: kNoEnd, logprobs: true, topLogprobs: 4,
    }));
    const lps = session.lastLogprobs;
    assert.equal(lps.length, 10);
    assert.equal(Buffer.from(lps.flatMap((e) => e.bytes)).toString('utf8'), text);

    const promptIds = await model.tokenize(prompt);
    const generated = lps.map((e) => e.id);
    const rows = await session.evalLogits([...promptIds, ...generated]);
    lps.forEach((e, i) => {
      const row = rows[promptIds.length - 1 + i];
      assert.ok(Math.abs(e.logprob - logSoftmax(row, generated[i])) < 1e-3, `token ${i}: ${e.logprob}`);
      assert.equal(e.topLogprobs.length, 4);
      for (let k = 1; k < 4; ++k) assert.ok(e.topLogprobs[k - 1].logprob >= e.topLogprobs[k].logprob);
    });
  });

  test('greedy chat: the chosen token heads the alternatives; off leaves lastLogprobs null', async () => {
    const messages = [{ role: 'user', content: 'Name a colour.' }];
    const text = await collect(session.chat(messages, { maxTokens: 8, temperature: 0, logprobs: true, topLogprobs: 2 }));
    const lps = session.lastLogprobs;
    assert.ok(lps.length > 0);
    assert.equal(Buffer.from(lps.flatMap((e) => e.bytes)).toString('utf8'), text);
    for (const e of lps) assert.equal(e.id, e.topLogprobs[0].id);
    await collect(session.chat(messages, { maxTokens: 4, temperature: 0 }));
    assert.equal(session.lastLogprobs, null);
  });

  test('bad values are clear errors', async () => {
    await assert.rejects(collect(session.generate('x', { logprobs: 'yes' })), /logprobs must be a boolean/);
    await assert.rejects(collect(session.generate('x', { topLogprobs: 2 })), /topLogprobs needs logprobs: true/);
    await assert.rejects(collect(session.generate('x', { logprobs: true, topLogprobs: 21 })), /topLogprobs must be an integer in \[0, 20\]/);
  });
});
