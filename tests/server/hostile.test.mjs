// Hostile clients against a live `runnel serve`: each attack gets a clear 4xx/5xx with
// an OpenAI-shaped JSON error, and the server keeps serving the official openai client
// meanwhile. Slow requests (slowloris) meet --request-timeout / --idle-timeout (408),
// big headers --max-header-bytes (431), big bodies --max-body-bytes (413), a flood of
// connections --max-connections (503 + Retry-After); requests that ask too much meet
// --max-messages, --max-prompt-tokens, --max-completion-tokens and the fixed stop and
// logit_bias bounds (400 naming the field); the API key is required (compared in
// constant time: tests/native/server_connection_test.cpp), --web-root serves nothing
// outside itself, and CORS answers only the configured origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, writeFileSync, symlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';

import { runServe, startServer, stopServerCleanly } from './lib/server.mjs';

const kKey = 'sk-hostile-test';
const kOrigin = 'https://good.example';
const question = [{ role: 'user', content: 'What is the capital of France?' }];

let server;
let client;
let webRoot;
let outside;

before(async () => {
  webRoot = mkdtempSync(path.join(tmpdir(), 'runnel-webroot-'));
  outside = mkdtempSync(path.join(tmpdir(), 'runnel-outside-'));
  writeFileSync(path.join(webRoot, 'index.html'), '<p>demo</p>');
  writeFileSync(path.join(outside, 'secret.txt'), 'TOP-SECRET');
  symlinkSync(path.join(outside, 'secret.txt'), path.join(webRoot, 'link.txt'));
  symlinkSync(outside, path.join(webRoot, 'linkdir'));
  server = await startServer([
    '--api-key', kKey, '--cors', kOrigin, '--web-root', webRoot,
    '--slots', '2', '--queue', '4',
    '--max-body-bytes', '65536', '--max-header-bytes', '4096',
    '--request-timeout', '3', '--idle-timeout', '2',
    '--max-messages', '8', '--max-prompt-tokens', '200', '--max-completion-tokens', '64',
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: kKey, maxRetries: 0 });
});
after(async () => {
  await stopServerCleanly(server);
  rmSync(webRoot, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

// Sends `text` on a fresh connection (then `trickle`: one byte per interval, until the
// server answers); resolves to { status, headers, body, ms } or { status: 0 } if the
// server closed without an answer.
function rawRequest(port, text, { trickle = null, intervalMs = 200, timeoutMs = 15000 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let timer = null;
    const done = () => {
      clearInterval(timer);
      clearTimeout(deadline);
      const s = data.toString('latin1');
      const at = s.indexOf('\r\n\r\n');
      const m = s.match(/^HTTP\/1\.1 (\d+)/);
      resolve({
        status: m ? Number(m[1]) : 0,
        head: at >= 0 ? s.slice(0, at) : s,
        body: at >= 0 ? data.subarray(at + 4).toString('utf8') : '',
        ms: Date.now() - t0,
      });
    };
    const deadline = setTimeout(() => { socket.destroy(); reject(new Error(`no answer in ${timeoutMs} ms`)); }, timeoutMs);
    socket.on('connect', () => {
      socket.write(text);
      if (trickle) {
        let i = 0;
        timer = setInterval(() => { if (!socket.destroyed) socket.write(trickle[i++ % trickle.length]); }, intervalMs);
      }
    });
    socket.on('data', (d) => { data = Buffer.concat([data, d]); });
    socket.on('error', () => {});  // a reset after the answer: what came is what counts
    socket.on('close', done);
  });
}

const errorCode = (reply) => JSON.parse(reply.body).error.code;

// A short chat through the official client: the server still serves.
async function quickChat() {
  const t0 = Date.now();
  const r = await client.chat.completions.create({ messages: question, max_tokens: 4, temperature: 0 });
  assert.equal(r.choices.length, 1);
  return Date.now() - t0;
}

test('slowloris: trickling requests get 408 at the deadline while the openai client is served', async () => {
  const slow = [];
  for (let i = 0; i < 12; ++i) {
    slow.push(rawRequest(server.port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nX-Slow: ', { trickle: 'a' }));
  }
  await new Promise((r) => setTimeout(r, 300));
  // Served at once, though twelve connections hold half a request each.
  for (let i = 0; i < 3; ++i) assert.ok((await quickChat()) < 5000);
  const replies = await Promise.all(slow);
  for (const r of replies) {
    assert.equal(r.status, 408, r.head);
    assert.equal(errorCode(r), 'request_timeout');
    assert.ok(r.ms >= 2800 && r.ms < 6000, `answered after ${r.ms} ms; --request-timeout is 3 s`);
  }
  // A request that stalls half-way (a body that never comes) waits only --idle-timeout.
  const stalled = await rawRequest(server.port,
    `POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${kKey}\r\nContent-Length: 500\r\n\r\n{"messages":`);
  assert.equal(stalled.status, 408);
  assert.ok(stalled.ms >= 1800 && stalled.ms < 4000, `${stalled.ms} ms`);
  await quickChat();
});

test('oversized headers get 431, oversized bodies 413, each with a JSON error', async () => {
  const big = await rawRequest(server.port,
    `GET /health HTTP/1.1\r\nHost: a\r\n${'X-Pad: '.concat('p'.repeat(100), '\r\n').repeat(60)}\r\n`);
  assert.equal(big.status, 431);
  assert.equal(errorCode(big), 'header_too_large');
  // Many small header lines count the same.
  const many = await rawRequest(server.port, `GET /health HTTP/1.1\r\nHost: a\r\n${'A: b\r\n'.repeat(1000)}\r\n`);
  assert.equal(many.status, 431);

  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(70000) }] });
  const r = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', body, headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${kKey}` },
  });
  assert.equal(r.status, 413);
  const e = (await r.json()).error;
  assert.match(e.message, /--max-body-bytes 65536/);
  await quickChat();
});

test('requests that ask too much: 400 naming the field, through the openai client', async () => {
  const m = { role: 'user', content: 'hi' };
  const cases = [
    [{ messages: Array(9).fill(m) }, 'messages', /at most 8 messages, got 9/],
    [{ messages: [m], max_tokens: 65 }, 'max_tokens', /at most 64, got 65/],
    [{ messages: [{ role: 'user', content: 'word '.repeat(300) }] }, 'messages', /at most 200 \(--max-prompt-tokens\)/],
    [{ messages: [m], stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4/],
    [{ messages: [m], stop: ['s'.repeat(257)] }, 'stop', /at most 256 bytes, got 257/],
    [{ messages: [m], logit_bias: Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [i + 100, 1])) },
      'logit_bias', /at most 1024 entries, got 1025/],
  ];
  for (const [body, param, message] of cases) {
    await assert.rejects(client.chat.completions.create(body), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
      assert.equal(e.param, param);
      assert.match(e.message, message);
      return true;
    });
  }
  // Without max_tokens a reply stops at --max-completion-tokens.
  const r = await client.completions.create({ prompt: 'Once upon a time', temperature: 0, logit_bias: { 0: -100, 2: -100 } });
  assert.equal(r.usage.completion_tokens, 64);
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('the API key: none or a wrong one (even one byte off) gets 401; /health stays open', async () => {
  for (const auth of [undefined, 'Bearer sk-hostile-tesu', `Bearer ${kKey}x`, 'Bearer ', kKey]) {
    const r = await fetch(`${server.url}/v1/models`, { headers: auth ? { Authorization: auth } : {} });
    assert.equal(r.status, 401, String(auth));
    assert.equal((await r.json()).error.code, 'invalid_api_key');
  }
  assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  assert.equal((await fetch(`${server.url}/v1/models`, { headers: { Authorization: `Bearer ${kKey}` } })).status, 200);
});

test('--web-root serves nothing outside itself: .., %2e%2e, symlinks', async () => {
  assert.equal((await rawRequest(server.port, 'GET /index.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')).status, 200);
  const escapes = [
    '/../' + path.basename(outside) + '/secret.txt',
    '/%2e%2e/' + path.basename(outside) + '/secret.txt',
    '/%2E%2E%2F' + path.basename(outside) + '%2Fsecret.txt',
    '/link.txt',
    '/linkdir/secret.txt',
    '/./linkdir/../link.txt',
  ];
  for (const p of escapes) {
    const r = await rawRequest(server.port, `GET ${p} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
    assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
    assert.ok(!r.body.includes('TOP-SECRET'), p);
  }
});

test('CORS answers only the configured origin', async () => {
  const good = await fetch(`${server.url}/health`, { headers: { Origin: kOrigin } });
  assert.equal(good.headers.get('access-control-allow-origin'), kOrigin);
  const evil = await fetch(`${server.url}/health`, { headers: { Origin: 'https://evil.example' } });
  assert.equal(evil.headers.get('access-control-allow-origin'), null);
  const preflight = (origin) => fetch(`${server.url}/v1/chat/completions`, {
    method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
  });
  const ok = await preflight(kOrigin);
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get('access-control-allow-origin'), kOrigin);
  const refused = await preflight('https://evil.example');
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get('access-control-allow-origin'), null);
  assert.equal((await refused.json()).error.code, 'origin_not_allowed');
});

test('a flood of connections: beyond --max-connections and a short backlog, 503 + Retry-After', async () => {
  const small = await startServer(['--slots', '1', '--queue', '2', '--max-connections', '4', '--request-timeout', '5']);
  try {
    // Four connections hold every thread, eight wait in the backlog, the rest are refused.
    const held = [];
    for (let i = 0; i < 12; ++i) {
      const s = net.connect(small.port, '127.0.0.1');
      s.on('error', () => {});
      s.write('GET /health HTTP/1.1\r\n');
      held.push(s);
      await new Promise((r) => setTimeout(r, 20));
    }
    const refused = await rawRequest(small.port, 'GET /health HTTP/1.1\r\nHost: a\r\n\r\n');
    assert.equal(refused.status, 503);
    assert.match(refused.head, /\r\nRetry-After: 1(\r\n|$)/);
    assert.equal(errorCode(refused), 'too_many_connections');
    for (const s of held) s.destroy();
    // Served again once they are gone.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; ++i) {
      status = (await fetch(`${small.url}/health`)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200);
  } finally {
    await stopServerCleanly(small);
  }
});

test('limit options out of range: exit 1 with one line naming the option and the range', async () => {
  const cases = [
    [['--max-connections', '5', '--queue', '8'], '--max-connections: must be in [slots + queue + 1 = 10, 4096], got 5'],
    [['--idle-timeout', '0'], '--idle-timeout: must be in (0, 86400] seconds, got 0.000000'],
    [['--max-header-bytes', '100'], '--max-header-bytes: must be in [1024, 1048576], got 100'],
    [['--max-prompt-tokens', '-1'], '--max-prompt-tokens: must be >= 0, got -1'],
  ];
  for (const [args, message] of cases) {
    const r = await runServe(args, { timeoutMs: 20000 });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr, `runnel: error: ${message}\n`);
  }
});
