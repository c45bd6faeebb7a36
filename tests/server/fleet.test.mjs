// A fleet on loopback (scripts/fleet.sh: three `runnel serve` replicas, one thread each,
// behind nginx) under load from the official openai client: (1) kill -9 of a replica
// fails only requests in flight on it, later ones go to the others; (2) a rolling
// restart with SIGTERM, one replica at a time, fails none; (3) a 5-turn chat sent with
// an X-Conversation-Id header lands on one replica and reuses its cache on every
// follow-up turn. Skips, saying so, where nginx is not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

import { binary, model } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fleetScript = path.join(root, 'scripts/fleet.sh');
// Debian's nginx is in /usr/sbin, off a normal user's PATH (scripts/fleet.sh looks there too).
const haveNginx = spawnSync('sh', ['-c', 'command -v nginx || test -x /usr/sbin/nginx']).status === 0;
const skip = haveNginx ? false : 'nginx is not installed (apt-get install nginx-light; scripts/setup.sh --tests does)';

const kReplicas = 3;
let dir;
let env;
let front;
let replicas = [];  // [{ pid, url }]

function fleet(...args) {
  const r = spawnSync(fleetScript, args, { env, encoding: 'utf8', timeout: 180000 });
  assert.equal(r.status, 0, `fleet.sh ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

// The same without blocking the event loop (the load goes on meanwhile).
function fleetAsync(...args) {
  return new Promise((resolve, reject) => execFile(fleetScript, args, { env, encoding: 'utf8', timeout: 180000 },
    (error, stdout, stderr) => (error ? reject(new Error(`fleet.sh ${args.join(' ')}: ${stderr}`)) : resolve(stdout))));
}

function parseLines(out) {
  const lines = out.trim().split('\n');
  return lines.map((l) => l.split(' '));
}

before(() => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'runnel-fleet-test-'));
  // A free-looking range below Linux's ephemeral ports (32768 and up), where any client
  // connection of the suite could hold one: a busy port makes fleet.sh refuse, naming it.
  const base = 20000 + Math.floor(Math.random() * 1200) * 10;
  env = { ...process.env, RUNNEL_BIN: binary, RUNNEL_FLEET_DIR: dir, RUNNEL_FLEET_PORT: String(base) };
  const lines = parseLines(fleet('start', String(kReplicas), model, '--', '-t', '1', '--slots', '2', '--queue', '16'));
  assert.equal(lines[0][0], 'front');
  front = lines[0][1];
  replicas = lines.slice(1).map(([word, pid, url]) => {
    assert.equal(word, 'replica');
    return { pid: Number(pid), url };
  });
  assert.equal(replicas.length, kReplicas);
});

after(() => {
  if (skip) return;
  spawnSync(fleetScript, ['stop'], { env, encoding: 'utf8', timeout: 120000 });
  rmSync(dir, { recursive: true, force: true });
});

const client = () => new OpenAI({ baseURL: `${front}/v1`, apiKey: 'unused', maxRetries: 0 });

// Requests from `workers` loops until stop() (alternately streamed and not), each
// recorded as { start, end, ok, error }.
function load(workers = 4) {
  const c = client();
  const records = [];
  let running = true;
  const one = async (i) => {
    const rec = { start: Date.now(), end: 0, ok: false, error: null };
    records.push(rec);
    try {
      const body = { messages: [{ role: 'user', content: `Count to ten, please (${i}).` }], max_tokens: 16, temperature: 0 };
      if (i % 2) {
        const stream = await c.chat.completions.create({ ...body, stream: true });
        let finish = null;
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
        if (!finish) throw new Error('stream ended without a finish_reason');
      } else {
        const r = await c.chat.completions.create(body);
        if (!r.choices[0].finish_reason) throw new Error('no finish_reason');
      }
      rec.ok = true;
    } catch (e) {
      rec.error = String(e);
    }
    rec.end = Date.now();
  };
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = w; running; i += workers) await one(i);
  });
  return {
    records,
    stop: async () => { running = false; await Promise.all(loops); return records; },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('affinity: a 5-turn chat with X-Conversation-Id reuses the cache on every follow-up turn', { skip }, async (t) => {
  const c = client();
  const messages = [{ role: 'system', content: 'You are a terse assistant.' }];
  let previous = null;
  for (let turn = 0; turn < 5; ++turn) {
    messages.push({ role: 'user', content: `Turn ${turn}: name a colour.` });
    const r = await c.chat.completions.create({ messages, max_tokens: 8, temperature: 0 },
      { headers: { 'X-Conversation-Id': 'conversation-42' } });
    const cached = r.usage.prompt_tokens_details.cached_tokens;
    if (previous) {
      // The whole previous prompt is a prefix of this one, and its replica kept it.
      assert.ok(cached >= previous.prompt_tokens, `turn ${turn}: ${cached} cached of ${r.usage.prompt_tokens}; ` +
        `the previous prompt had ${previous.prompt_tokens}`);
    }
    t.diagnostic(`turn ${turn}: prompt ${r.usage.prompt_tokens}, cached ${cached}`);
    previous = r.usage;
    messages.push({ role: 'assistant', content: r.choices[0].message.content });
  }
});

test('kill -9 of one replica: only its in-flight requests fail; later ones go to the others', { skip }, async (t) => {
  const l = load(4);
  await sleep(3000);
  const victim = replicas[1];
  const killedAt = Date.now();
  process.kill(victim.pid, 'SIGKILL');
  await sleep(6000);
  const records = await l.stop();
  const failed = records.filter((r) => !r.ok);
  const later = records.filter((r) => r.start > killedAt + 50);
  assert.ok(later.length >= 4, `only ${later.length} requests after the kill`);
  assert.deepEqual(later.filter((r) => !r.ok).map((r) => r.error), [], 'requests started after the kill failed');
  // Failures: only requests that were running at the kill (at most the 4 workers').
  for (const r of failed) assert.ok(r.start <= killedAt && r.end >= killedAt, JSON.stringify(r));
  assert.ok(failed.length <= 4);
  t.diagnostic(`${records.length} requests, ${later.length} after the kill, ${failed.length} failed (in flight on it)`);
  // Back to three replicas.
  const [[, pid, url]] = parseLines(await fleetAsync('restart', '2'));
  assert.equal(url, victim.url);
  replicas[1] = { pid: Number(pid), url };
});

test('a rolling restart with SIGTERM, one replica at a time: no request fails', { skip }, async (t) => {
  const l = load(4);
  await sleep(2000);
  for (let i = 1; i <= kReplicas; ++i) {
    const [[, pid, url]] = parseLines(await fleetAsync('restart', String(i)));
    assert.equal(url, replicas[i - 1].url);
    assert.notEqual(Number(pid), replicas[i - 1].pid);
    replicas[i - 1] = { pid: Number(pid), url };  // restart waited until nginx uses it again
  }
  const records = await l.stop();
  const failed = records.filter((r) => !r.ok);
  assert.ok(records.length >= 12, `only ${records.length} requests`);
  t.diagnostic(`${records.length} requests during the restarts, ${failed.length} failed`);
  assert.deepEqual(failed.map((r) => r.error), []);
});
