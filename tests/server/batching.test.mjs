// Continuous batching on runnel serve --slots 4 with the real SmolLM2: four different
// requests at once are decoded together (/metrics counts batched passes) and each gets
// the same greedy text it gets alone; a long prompt arriving mid-stream does not stop
// the running stream; cancelling one stream leaves the others going.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { kNoEnd, parseMetrics, startServerWithClient, stopServerCleanly, waitForStderr } from './lib/server.mjs';

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient(['--slots', '4', '-t', '2'])));
after(() => stopServerCleanly(server));

const questions = [
  'Write a sentence about the sea.',
  'Name three colours and say why you like them.',
  'What is the capital of France? Answer in one sentence.',
  'Describe a cat to someone who has never seen one.',
];
const request = (content) => ({ messages: [{ role: 'user', content }], max_tokens: 40, temperature: 0, logit_bias: kNoEnd });

async function stream(content, onFirst) {
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...request(content), stream: true })) {
    const d = chunk.choices[0]?.delta?.content ?? '';
    if (d && !text && onFirst) onFirst();
    text += d;
  }
  return text;
}

const metrics = async () => parseMetrics(await (await fetch(`${server.url}/metrics`)).text());

test('four requests at once are batched and each gets its greedy text from alone', async () => {
  const alone = [];
  for (const q of questions) alone.push((await client.chat.completions.create(request(q))).choices[0].message.content);
  const before = await metrics();
  const together = await Promise.all(questions.map((q) => stream(q)));
  assert.deepEqual(together, alone);
  const after = await metrics();
  const passes = after.runnel_batched_passes_total - before.runnel_batched_passes_total;
  const tokens = after.runnel_batched_tokens_total - before.runnel_batched_tokens_total;
  assert.ok(passes > 10, `batched passes: ${passes}`);
  assert.ok(tokens / passes > 2, `tokens per batched pass: ${tokens / passes}`);
});

test('a long prompt arriving mid-stream does not stop the running stream', async () => {
  const long = `Summarize: ${'The river runs past the town and the fields. '.repeat(60)}`;
  let firstOfLong = 0;
  const pieceTimes = [];
  const running = (async () => {
    for await (const chunk of await client.chat.completions.create({
      ...request(questions[0]), max_tokens: 80, stream: true,
    })) {
      if (chunk.choices[0]?.delta?.content) pieceTimes.push(performance.now());
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 150));
  const second = stream(long, () => { firstOfLong = performance.now(); });
  await Promise.all([running, second]);
  // Pieces of the running stream kept coming while the long prompt was read.
  const during = pieceTimes.filter((t) => t < firstOfLong).length;
  assert.ok(firstOfLong > 0 && during > 5, `pieces before the long prompt's first: ${during}`);
});

test('cancelling one stream leaves the others going', async () => {
  const controller = new AbortController();
  const cancelled = (async () => {
    const s = await client.chat.completions.create({ ...request(questions[1]), max_tokens: 200, stream: true },
      { signal: controller.signal });
    let n = 0;
    for await (const chunk of s) {
      if (chunk.choices[0]?.delta?.content && ++n === 3) controller.abort();
    }
  })();
  const other = stream(questions[2]);
  await cancelled.catch(() => {});  // the client ends the stream (quietly or with an abort error)
  await waitForStderr(server, /^POST \/v1\/chat\/completions 200 prompt=\d+ completion=\d+ finish=abort/m);
  const alone = (await client.chat.completions.create(request(questions[2]))).choices[0].message.content;
  assert.equal(await other, alone);
});
