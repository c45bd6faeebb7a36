// Graceful drain of `runnel serve` on SIGTERM, as a balancer sees it: the port closes at
// once (new connections are refused), requests that still arrive on open connections
// get 503 + Retry-After + Connection: close (/health too), the generation in flight
// finishes its stream, and the process exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { kNoEnd, startServerWithClient } from './lib/server.mjs';

// A kept-alive connection on which requests are sent one at a time.
class Connection {
  constructor(port) {
    this.socket = net.connect(port, '127.0.0.1');
    this.data = Buffer.alloc(0);
    this.waiters = [];
    this.socket.on('data', (d) => { this.data = Buffer.concat([this.data, d]); this.poke(); });
    this.socket.on('close', () => { this.closed = true; this.poke(); });
    this.socket.on('error', () => {});
    this.ready = new Promise((r) => this.socket.on('connect', r));
  }
  poke() { for (const w of this.waiters.splice(0)) w(); }
  // Sends `text`; resolves to { status, head, body } once a Content-Length reply is in.
  async request(text) {
    this.socket.write(text);
    for (;;) {
      const s = this.data.toString('latin1');
      const at = s.indexOf('\r\n\r\n');
      if (at >= 0) {
        const length = Number(s.slice(0, at).match(/\r\nContent-Length: (\d+)/i)?.[1] ?? 0);
        if (this.data.length >= at + 4 + length) {
          const reply = { status: Number(s.slice(9, 12)), head: s.slice(0, at),
            body: this.data.subarray(at + 4, at + 4 + length).toString('utf8') };
          this.data = this.data.subarray(at + 4 + length);
          return reply;
        }
      }
      if (this.closed) throw new Error(`closed without a reply; got ${JSON.stringify(s)}`);
      await new Promise((r) => this.waiters.push(r));
    }
  }
}

test('SIGTERM: new connections refused, new work on open ones 503 + Retry-After, in-flight finishes, exit 0', async () => {
  const { server, client } = await startServerWithClient(['--slots', '1', '--queue', '2']);
  const a = new Connection(server.port);
  const c = new Connection(server.port);
  await Promise.all([a.ready, c.ready]);
  assert.equal((await a.request('GET /health HTTP/1.1\r\nHost: a\r\n\r\n')).status, 200);

  const stream = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'Tell me a long story.' }], max_tokens: 48, temperature: 0,
    logit_bias: kNoEnd, stream: true,
  });
  const it = stream[Symbol.asyncIterator]();
  await it.next();  // generating
  server.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));

  // A new connection is refused: a balancer sends the request elsewhere.
  await assert.rejects(new Promise((resolve, reject) => {
    const s = net.connect(server.port, '127.0.0.1', () => { s.destroy(); resolve(); });
    s.on('error', reject);
  }), /ECONNREFUSED/);
  // New work on an open connection: 503, Retry-After, and the connection closes.
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  const refused = await a.request(`POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`);
  assert.equal(refused.status, 503);
  assert.match(refused.head, /\r\nRetry-After: 1(\r\n|$)/);
  assert.match(refused.head, /\r\nConnection: close(\r\n|$)/i);
  assert.equal(JSON.parse(refused.body).error.code, 'shutting_down');
  const health = await c.request('GET /health HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.equal(health.status, 503);

  // The stream in flight runs to its end.
  let chunks = 1;
  let finish = null;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    ++chunks;
    finish = r.value.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'length');
  assert.ok(chunks >= 48, `${chunks} chunks`);
  const { code } = await server.exited;
  assert.equal(code, 0, server.stderr());
});
