// Speculative decoding by prompt lookup on runnel serve (--lookup-ngram): with the real
// SmolLM2, greedy replies (streamed and not, with a grammar too) are the same text as a
// server without it, drafts are checked and accepted (/metrics), and sampled replies
// still follow their constraints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { model, parseMetrics, runServe, startServerWithClient, stopServerCleanly } from './lib/server.mjs';

let plain;
let spec;

before(async () => {
  plain = await startServerWithClient(['--lookup-ngram', '0']);  // on by default
  spec = await startServerWithClient(['--draft-max', '6']);
});
after(async () => {
  await stopServerCleanly(plain.server);
  await stopServerCleanly(spec.server);
});

const text = 'The river flows through the old town, past the market square and the stone bridge ' +
  'where the fishermen sell their catch every morning.';
const repeat = [{ role: 'user', content: `Repeat this text exactly, word for word: ${text}` }];

test('greedy replies are the same text with and without prompt lookup, which accepts drafts', async () => {
  const request = { messages: repeat, max_tokens: 60, temperature: 0 };
  const a = await plain.client.chat.completions.create(request);
  const b = await spec.client.chat.completions.create(request);
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.equal(b.usage.completion_tokens, a.usage.completion_tokens);

  let streamed = '';
  for await (const chunk of await spec.client.chat.completions.create({ ...request, stream: true })) {
    streamed += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(streamed, a.choices[0].message.content);

  const metrics = parseMetrics(await (await fetch(`${spec.server.url}/metrics`)).text());
  assert.ok(metrics.runnel_draft_tokens_total > 0, JSON.stringify(metrics));
  const off = parseMetrics(await (await fetch(`${plain.server.url}/metrics`)).text());
  assert.equal(off.runnel_draft_tokens_total, 0, '--lookup-ngram 0 turns it off');
  assert.ok(metrics.runnel_draft_tokens_accepted_total > 0);
  assert.ok(metrics.runnel_draft_tokens_accepted_total <= metrics.runnel_draft_tokens_total);
  const none = parseMetrics(await (await fetch(`${plain.server.url}/metrics`)).text());
  assert.equal(none.runnel_draft_tokens_total, 0);
});

test('with a schema and logprobs: the same greedy JSON; sampled replies still validate', async () => {
  const schema = {
    type: 'object',
    properties: { items: { type: 'array', items: { type: 'string', maxLength: 12 }, maxItems: 4 } },
    required: ['items'],
    additionalProperties: false,
  };
  const request = {
    messages: [{ role: 'user', content: 'List the fruits: apple, pear, plum. As JSON.' }],
    max_tokens: 80, temperature: 0, logprobs: true, top_logprobs: 2,
    response_format: { type: 'json_schema', json_schema: { name: 'fruits', strict: true, schema } },
  };
  const a = await plain.client.chat.completions.create(request);
  const b = await spec.client.chat.completions.create(request);
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.deepEqual(b.choices[0].logprobs.content.map((e) => e.token), a.choices[0].logprobs.content.map((e) => e.token));
  for (const seed of [1, 2, 3]) {
    const r = await spec.client.chat.completions.create({ ...request, temperature: 1, seed });
    const doc = JSON.parse(r.choices[0].message.content);
    assert.ok(Array.isArray(doc.items) && doc.items.length <= 4);
  }
});

test('--model-draft: the same model as its own draft: the same text, nearly every draft accepted', async () => {
  const drafted = await startServerWithClient(['--model-draft', model, '--draft-max', '4']);
  try {
    const request = { messages: repeat, max_tokens: 40, temperature: 0 };
    const a = await plain.client.chat.completions.create(request);
    const b = await drafted.client.chat.completions.create(request);
    assert.equal(b.choices[0].message.content, a.choices[0].message.content);
    const m = parseMetrics(await (await fetch(`${drafted.server.url}/metrics`)).text());
    assert.ok(m.runnel_draft_tokens_total > 10, JSON.stringify(m));
    // Not all: the draft reads the history in other batches than the model did, and the
    // batched and one-token products round differently at near-ties.
    assert.ok(m.runnel_draft_tokens_accepted_total >= 0.8 * m.runnel_draft_tokens_total, JSON.stringify(m));
  } finally {
    await stopServerCleanly(drafted.server);
  }
  // A draft model of another vocabulary is refused at start, naming it.
  const bad = await runServe(['--model-draft', 'tests/data/no-such.gguf']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /no-such\.gguf/);
});

