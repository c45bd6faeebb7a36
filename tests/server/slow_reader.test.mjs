// A client that sends a valid request and then reads none of the reply must not hold a
// slot: once the kernel's socket buffers are full, each write waits at most
// --write-timeout, the connection is dropped, the generation is cancelled (streams) or
// its reply abandoned (non-streamed), and the slot serves the next request. Node cannot
// shrink a socket's receive buffer, so the replies are made large enough to fill the
// buffers on both sides (on loopback they took 3500 to 4000 streamed tokens, so 4000 was
// not enough): a tiny random-weight model (`runnel synth-model`, fast) writing 12000
// streamed or 8000 non-streamed tokens with 20 top_logprobs each (about 2 KiB per
// token), its end token banned, in a 16384-token context. With --slots 1, the openai client's request that waits
// behind the stalled one must complete within a bound that only a freed slot explains.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { binary, parseMetrics, startServerWithClient, stopServerCleanly, waitForStderr } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const vocab = path.join(root, 'tests/data/tokenizer/ggml-vocab-gpt-2.gguf');
const kWriteTimeoutS = 2;
const kEndToken = 50256;  // gpt-2's <|endoftext|>
const kStreamTokens = 12000;  // a stream is cut once the buffers fill: far fewer run
const kBodyTokens = 8000;     // a non-streamed reply is generated whole, then written

let dir;
let server;
let client;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'runnel-slow-reader-'));
  const file = path.join(dir, 'tiny.gguf');
  execFileSync(binary, ['synth-model', '--shape', 'tiny', '--type', 'q8_0', '--tokenizer-from', vocab, '-o', file],
    { stdio: 'ignore' });
  ({ server, client } = await startServerWithClient(
    ['--slots', '1', '--queue', '4', '-t', '2', '-c', '16384', '--write-timeout', String(kWriteTimeoutS)], { modelPath: file }));
});
after(async () => {
  await stopServerCleanly(server);
  rmSync(dir, { recursive: true, force: true });
});

const metrics = async () => parseMetrics(await (await fetch(`${server.url}/metrics`)).text());

// Sends a chat request on a fresh connection and never reads from it: the socket is
// paused before any reply arrives. Resolves to the socket once the request is written.
function stalledRequest(body) {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});  // a reset from the server that dropped us: expected
    socket.on('connect', () => {
      socket.pause();
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n` +
                   `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`, (e) => (e ? reject(e) : resolve(socket)));
    });
  });
}

// The one slot is busy with the stalled request (polling /metrics, which connection
// threads answer beside the slots).
async function waitForBusySlot() {
  for (let i = 0; i < 200; ++i) {
    if ((await metrics()).runnel_slots_busy === 1) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail('the stalled request never took the slot');
}

const bigReply = (stream) => ({
  messages: [{ role: 'user', content: 'Tell me a long story.' }],
  stream,
  max_tokens: stream ? kStreamTokens : kBodyTokens,
  logprobs: true,
  top_logprobs: 20,
  temperature: 1,
  logit_bias: { [kEndToken]: -100 },
});

// A short chat through the official client, which queues behind the stalled request.
async function queuedChat() {
  const t0 = Date.now();
  const r = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0,
  });
  assert.equal(r.choices.length, 1);
  assert.equal(r.usage.completion_tokens, 4);
  return Date.now() - t0;
}

test('a stream nobody reads is dropped after --write-timeout and its slot serves the next request', async (t) => {
  const since = server.stderr().length;
  const t0 = Date.now();
  const socket = await stalledRequest(bigReply(true));
  await waitForBusySlot();
  // Meanwhile the server answers what needs no slot at once.
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  await queuedChat();
  const done = Date.now() - t0;
  // The stalled stream was cut, not run to its end: its log line says abort, with fewer
  // tokens than asked (12000 tokens of 2 KiB do not fit in the socket buffers).
  const [, completion, ms] = await waitForStderr(server,
    /POST \/v1\/chat\/completions 200 prompt=\d+ completion=(\d+) finish=abort (\d+)ms/, { since });
  assert.ok(Number(completion) < kStreamTokens, `the stalled stream generated ${completion} tokens`);
  // The queued request was served as soon as the slot was freed.
  assert.ok(done < Number(ms) + 3000, `served ${done} ms after the stall began; the stall was cut at ${ms} ms`);
  t.diagnostic(`stream cut after ${completion} tokens at ${ms} ms; the queued request done at ${done} ms`);
  assert.equal((await metrics()).runnel_slots_busy, 0);
  socket.destroy();
  await queuedChat();  // and afterwards
});

test('a large non-streamed reply nobody reads is dropped after --write-timeout; the slot is freed', async (t) => {
  const since = server.stderr().length;
  const before = await metrics();
  const t0 = Date.now();
  const socket = await stalledRequest(bigReply(false));
  await waitForBusySlot();
  await queuedChat();
  const done = Date.now() - t0;
  // The whole reply was generated (a non-streamed body is written at its end, after
  // keep-alive spaces that fit in the buffers); writing its ~16 MB then stalled.
  const [, completion, ms] = await waitForStderr(server,
    /POST \/v1\/chat\/completions 200 prompt=\d+ completion=(\d+) finish=length (\d+)ms/, { since });
  assert.equal(Number(completion), kBodyTokens);
  assert.ok(done < Number(ms) + 3000, `served ${done} ms after the stall began; the stall ended at ${ms} ms`);
  // The connection was dropped one write timeout after the buffers filled (a blocking
  // send of the whole body used to wait past it: about 5 s with --write-timeout 2).
  const after = await metrics();
  const working = after.runnel_generation_seconds_total - before.runnel_generation_seconds_total +
                  after.runnel_prompt_seconds_total - before.runnel_prompt_seconds_total;
  const stalledS = Number(ms) / 1000 - working;
  assert.ok(stalledS < kWriteTimeoutS + 1.5, `the unread reply held its slot ${stalledS.toFixed(1)} s`);
  t.diagnostic(`reply of ${completion} tokens dropped at ${ms} ms, ${stalledS.toFixed(1)} s after its last token; ` +
               `the queued request done at ${done} ms`);
  assert.equal(after.runnel_slots_busy, 0);
  socket.destroy();
  await queuedChat();
});
