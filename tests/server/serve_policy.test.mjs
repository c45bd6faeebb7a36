// runnel serve's start-up and request policy, driven by the official `openai` npm
// client and child processes: a busy port is an error (one line, exit 1, not a second
// server splitting the traffic); a field the server does not implement gets a 400
// naming it, unless --lenient (then a warning line); one access-log line per request,
// streamed ones included, none with --log-disable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { kNoEnd, runServe, startServer, stopServer, waitForStderr, startServerWithClient, stopServerCleanly } from './lib/server.mjs';

const question = [{ role: 'user', content: 'What is the name of the capital city of France?' }];
const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient()));
after(() => stopServerCleanly(server));

// stderr lines written after `mark` (a length of server.stderr()).
const linesSince = (s, mark) => s.stderr().slice(mark).split('\n').filter(Boolean);

test('a busy port: the second server exits 1 with one error line and no SIGTERM banner', async () => {
  // A server that does start (the bug) is killed after 20 s and fails the test.
  const second = await runServe(['--port', String(server.port)], { timeoutMs: 20000 });
  assert.equal(second.code, 1, second.stderr);
  assert.equal(
    second.stderr,
    `runnel: error: cannot listen on 127.0.0.1:${server.port} (in use, or not an address of this machine)\n`,
  );
  // The first one still serves.
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
});

test('fields the server does not implement get a 400 naming them; harmless values are served', async () => {
  const refused = [
    [() => client.chat.completions.create({ messages: question, functions: [weatherTool.function] }), 'functions'],
    [() => client.chat.completions.create({ messages: question, n_probs: 2 }), 'n_probs'],
    [() => client.completions.create({ prompt: 'Once upon a time', suffix: 'The end.' }), 'suffix'],
    [() => client.embeddings.create({ input: 'cat', dimensions: 16 }), 'dimensions'],
  ];
  for (const [request, field] of refused) {
    await assert.rejects(request(), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${field}: ${e}`);
      assert.equal(e.param, field);
      assert.equal(e.code, 'unsupported_parameter');
      assert.match(e.message, new RegExp(`'${field}' is not supported.*--lenient`));
      return true;
    });
  }
  const r = await client.chat.completions.create({
    messages: question, temperature: 0, max_tokens: 4,
    tools: [], tool_choice: 'none', response_format: { type: 'text' }, logprobs: false,
    user: 'u-1', store: false, metadata: { app: 'test' }, parallel_tool_calls: false,
  });
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].message.content.length > 0);
});

test('access log: one line per request with status, tokens and time; a stream logs once, at its end', async () => {
  let mark = server.stderr().length;
  const r = await client.chat.completions.create({ messages: question, temperature: 0, max_tokens: 8 });
  const u = r.usage;
  await waitForStderr(server, new RegExp(
    `^POST /v1/chat/completions 200 prompt=${u.prompt_tokens} completion=${u.completion_tokens} ` +
    `finish=${r.choices[0].finish_reason} \\d+ms$`, 'm'), { since: mark });

  mark = server.stderr().length;
  const stream = await client.completions.create({
    prompt: 'Once upon a time', max_tokens: 12, temperature: 0, logit_bias: kNoEnd,
    stream: true, stream_options: { include_usage: true },
  });
  let usage = null;
  for await (const chunk of stream) usage = chunk.usage ?? usage;
  assert.equal(usage.completion_tokens, 12);
  // One line for the stream, written at its end: it counts all 12 tokens. (The server
  // may finish before the client has read the first chunks, so a mid-stream look at
  // the log proves nothing.)
  const streamLine = `POST /v1/completions 200 prompt=${usage.prompt_tokens} completion=12 finish=length`;
  await waitForStderr(server, new RegExp(`^${streamLine} \\d+ms$`, 'm'), { since: mark });
  assert.equal(linesSince(server, mark).filter(l => l.startsWith('POST /v1/completions')).length, 1);

  // Each line is written once its response has been sent: wait for it before the next
  // request, which may come on another connection (another server thread).
  await assert.rejects(client.chat.completions.create({ messages: question, temperature: 5 }), (e) => e.status === 400);
  await waitForStderr(server, /^POST \/v1\/chat\/completions 400 \d+ms$/m, { since: mark });
  const e = await client.embeddings.create({ input: 'The cat sat on the mat.' });
  await waitForStderr(server, /^POST \/v1\/embeddings 200 prompt=\d+ \d+ms$/m, { since: mark });
  await fetch(`${server.url}/health`);
  await waitForStderr(server, /^GET \/health 200 \d+ms$/m, { since: mark });
  assert.deepEqual(linesSince(server, mark).map((l) => l.replace(/ \d+ms$/, ' Tms')), [
    `${streamLine} Tms`,
    'POST /v1/chat/completions 400 Tms',
    `POST /v1/embeddings 200 prompt=${e.usage.prompt_tokens} Tms`,
    'GET /health 200 Tms',
  ]);
});

test('--lenient: the request is served without the fields, and a warning names them', async () => {
  const s = await startServer(['--lenient']);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const r = await c.chat.completions.create({
      messages: question, temperature: 0, max_tokens: 4, functions: [weatherTool.function],
    });
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.usage.completion_tokens, 4);
    await waitForStderr(s, /^POST \/v1\/chat\/completions 200 prompt=\d+ completion=4 finish=length \d+ms$/m);
    const warnings = s.stderr().split('\n').filter((l) => l.includes('warning'));
    assert.deepEqual(warnings, [
      'runnel serve: warning: POST /v1/chat/completions: ignoring unsupported functions (--lenient)',
    ]);
  } finally {
    assert.equal((await stopServer(s)).code, 0);
  }
});

test('--log-disable: no line per request', async () => {
  const s = await startServer(['--log-disable', '--lenient']);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await c.chat.completions.create({ messages: question, max_tokens: 2, functions: [weatherTool.function] });
    await assert.rejects(c.chat.completions.create({ messages: [] }), (e) => e.status === 400);
    await fetch(`${s.url}/health`);
  } finally {
    assert.equal((await stopServer(s)).code, 0);
  }
  const lines = s.stderr().split('\n').filter(Boolean);
  assert.equal(lines.length, 3, s.stderr());
  assert.match(lines[0], /^runnel serve: listening on /);
  assert.equal(lines[1], 'runnel serve: SIGTERM: finishing in-flight requests, then exiting');
  assert.equal(lines[2], 'runnel serve: stopped');
});
