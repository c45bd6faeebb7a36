// logprobs / top_logprobs and n through the official openai client: each token's log
// probability is the model's own (raw logits, before sampling settings), its bytes spell
// the reply, the alternatives are the likeliest first and their probabilities sum to at
// most 1 with the sampled token's; n choices come from one prompt evaluation, choice i
// sampling with seed + i.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { kNoEnd, startServerWithClient, stopServerCleanly } from './lib/server.mjs';

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient()));
after(() => stopServerCleanly(server));

const messages = [{ role: 'user', content: 'Write one sentence about the sea.' }];
const sampled = { temperature: 1, top_k: 0, top_p: 1, min_p: 0, logit_bias: kNoEnd };

// Checks one chat choice's logprobs.content against its text; returns it.
function checkContent(content, text, nTop) {
  assert.ok(Array.isArray(content) && content.length > 0);
  const bytes = [];
  for (const entry of content) {
    assert.ok(entry.logprob <= 0 && Number.isFinite(entry.logprob), JSON.stringify(entry));
    // "token" is the bytes as text; exact where they are whole characters.
    const decoded = Buffer.from(entry.bytes).toString('utf8');
    if (Buffer.from(decoded).equals(Buffer.from(entry.bytes))) assert.equal(entry.token, decoded);
    bytes.push(...entry.bytes);
    const top = entry.top_logprobs;
    assert.equal(top.length, nTop);
    for (let i = 1; i < top.length; ++i) assert.ok(top[i - 1].logprob >= top[i].logprob, 'most likely first');
    // The sampled token is among the alternatives when it is at least as likely as the
    // last of them (ties aside); with it, their probabilities sum to at most 1.
    const listed = top.some((t) => t.logprob === entry.logprob && t.token === entry.token);
    if (nTop > 0 && entry.logprob > top[nTop - 1].logprob) assert.ok(listed, JSON.stringify(entry));
    const p = top.reduce((sum, t) => sum + Math.exp(t.logprob), listed ? 0 : Math.exp(entry.logprob));
    assert.ok(p <= 1 + 1e-5, `probabilities sum to ${p}`);
  }
  assert.equal(Buffer.from(bytes).toString('utf8'), text, 'the tokens spell the reply');
  return content;
}

test('chat: logprobs with top_logprobs, sampled, spell the reply; greedy picks the top one', async () => {
  const r = await client.chat.completions.create({
    messages, max_tokens: 16, logprobs: true, top_logprobs: 5, seed: 3, ...sampled,
  });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'length');
  checkContent(choice.logprobs.content, choice.message.content, 5);
  assert.equal(choice.logprobs.content.length, r.usage.completion_tokens);

  const greedy = await client.chat.completions.create({
    messages, max_tokens: 12, logprobs: true, top_logprobs: 3, temperature: 0, logit_bias: kNoEnd,
  });
  const content = checkContent(greedy.choices[0].logprobs.content, greedy.choices[0].message.content, 3);
  for (const entry of content) assert.equal(entry.logprob, entry.top_logprobs[0].logprob, entry.token);

  // The figures are the model's own: banning the first greedy token moves the choice,
  // not the reported distribution.
  const first = content[0];
  const banned = await client.chat.completions.create({
    messages, max_tokens: 2, logprobs: true, top_logprobs: 3, temperature: 0,
    logit_bias: { ...kNoEnd, ...(await tokenIdsOf(first.token)) },
  });
  const b = banned.choices[0].logprobs.content[0];
  assert.notEqual(b.token, first.token);
  assert.equal(b.top_logprobs[0].token, first.token);
  assert.ok(Math.abs(b.top_logprobs[0].logprob - first.logprob) < 1e-3);
  assert.ok(b.logprob < first.logprob);
});

// A logit_bias banning the token that spells `text` (it must be one token).
async function tokenIdsOf(text) {
  const { execFileSync } = await import('node:child_process');
  const { binary, model } = await import('./lib/server.mjs');
  const out = execFileSync(binary, ['tokenize', '-m', model, '-p', text, '--ids', '--no-bos'], { encoding: 'utf8' });
  const ids = out.trim().split(/\s+/).map(Number);
  assert.equal(ids.length, 1, `'${text}' is one token`);
  return { [ids[0]]: -100 };
}

test('chat: streamed logprobs arrive with the text they spell, the same as not streamed', async () => {
  const request = { messages, max_tokens: 12, logprobs: true, top_logprobs: 2, temperature: 0, logit_bias: kNoEnd };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '';
  const content = [];
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    const delta = c.delta?.content ?? '';
    const entries = c.logprobs?.content ?? [];
    text += delta;
    // A chunk's tokens spell its text (a character split across tokens included).
    if (entries.length) assert.equal(Buffer.from(entries.flatMap((e) => e.bytes)).toString('utf8'), delta);
    content.push(...entries);
  }
  assert.equal(text, whole.choices[0].message.content);
  const expect = whole.choices[0].logprobs.content;
  assert.deepEqual(content.map((e) => e.token), expect.map((e) => e.token));
  for (let i = 0; i < expect.length; ++i) assert.ok(Math.abs(content[i].logprob - expect[i].logprob) < 1e-3);
});

test('completions: the legacy logprobs arrays line up with the text', async () => {
  const r = await client.completions.create({
    prompt: 'The sea is', max_tokens: 10, logprobs: 3, seed: 4, ...sampled,
  });
  const { text, logprobs } = r.choices[0];
  assert.equal(logprobs.tokens.join(''), text);
  assert.equal(logprobs.tokens.length, r.usage.completion_tokens);
  let offset = 0;
  logprobs.tokens.forEach((token, i) => {
    assert.equal(logprobs.text_offset[i], offset);
    offset += [...token].length;
    assert.ok(logprobs.token_logprobs[i] <= 0);
    const alternatives = Object.values(logprobs.top_logprobs[i]);
    assert.ok(alternatives.length >= 1 && alternatives.length <= 3);
    assert.ok(alternatives.reduce((s, lp) => s + Math.exp(lp), 0) <= 1 + 1e-5);
  });
});

test('n: several choices from one prompt, choice i sampled with seed + i', async () => {
  const r = await client.chat.completions.create({ messages, max_tokens: 10, n: 3, seed: 11, ...sampled });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = r.choices.map((c) => c.message.content);
  assert.ok(new Set(texts).size > 1, `three samples, all equal: ${texts[0]}`);
  assert.equal(r.usage.completion_tokens, 30);
  // Choices after the first reuse the prompt's cache, as a single request for the same
  // prompt and seed + 1 does: the same text.
  const one = await client.chat.completions.create({ messages, max_tokens: 10, seed: 12, ...sampled });
  assert.equal(one.choices[0].message.content, texts[1]);

  const stream = await client.completions.create({
    prompt: 'The sea is', max_tokens: 6, n: 2, seed: 2, stream: true, stream_options: { include_usage: true },
    logprobs: 1, ...sampled,
  });
  const text = ['', ''];
  const finish = [null, null];
  let usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text[c.index] += c.text;
      if (c.finish_reason) finish[c.index] = c.finish_reason;
      if (c.logprobs) assert.equal(c.logprobs.tokens.join(''), c.text);
    }
  }
  assert.deepEqual(finish, ['length', 'length']);
  assert.ok(text[0].length > 0 && text[1].length > 0);
  assert.equal(usage.completion_tokens, 12);
});

test('bad values name the field', async () => {
  const refused = [
    [{ messages, n: 9 }, 'n'],
    [{ messages, top_logprobs: 2 }, 'top_logprobs'],
    [{ messages, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
  ];
  for (const [body, param] of refused) {
    await assert.rejects(client.chat.completions.create(body), (e) => e.status === 400 && e.param === param);
  }
});
