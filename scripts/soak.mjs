// The traffic and the checks of scripts/soak.sh: mixed requests against a live `runnel
// serve` (started by soak.sh with --slots 2 --queue 2 --max-body-bytes 1 MiB
// --max-completion-tokens 48) for a given time, from WORKERS concurrent loops:
//   streamed and non-streamed chats and completions (the official openai client),
//   streams cancelled after a few chunks, embeddings, bodies that are not JSON or have
//   wrong fields, requests over a limit (max_tokens, body size), GET /health, /metrics,
//   /v1/models; with more workers than slots + queue, some get 429.
// Every answer must be a well-formed 2xx, 4xx (JSON error body) or 429; a 5xx or a
// dropped connection (other than our own cancels) fails the run. Every 5 s it samples
// the server's RSS and open file descriptors (/proc/PID): after the warm-up, RSS may
// grow by at most --rss-bound-mib, and once the traffic has stopped and idle
// keep-alive connections have closed, the descriptors must be back to their count
// before the traffic (within 2).
//
//   node scripts/soak.mjs --url URL --pid PID --minutes M [--workers 6] [--rss-bound-mib 32]
import { createRequire } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The openai client installed for tests/server (npm ci there).
const OpenAI = (await import(createRequire(path.join(root, 'tests/server/package.json')).resolve('openai'))).default;

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
  return pairs;
}, []));
const url = args.url;
const pid = Number(args.pid);
const minutes = Number(args.minutes);
const workers = Number(args.workers ?? 6);
const rssBoundMiB = Number(args['rss-bound-mib'] ?? 32);
if (!url || !pid || !(minutes > 0)) {
  console.error('usage: node scripts/soak.mjs --url URL --pid PID --minutes M [--workers N] [--rss-bound-mib N]');
  process.exit(2);
}

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const rssKiB = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)/m)[1]);
const fdCount = () => readdirSync(`/proc/${pid}/fd`).length;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const counts = {};  // kind -> status -> n
const failures = [];
const note = (kind, status) => {
  counts[kind] ??= {};
  counts[kind][status] = (counts[kind][status] ?? 0) + 1;
};
const fail = (kind, why) => {
  note(kind, 'FAIL');
  if (failures.length < 20) failures.push(`${kind}: ${why}`);
};

// A non-2xx answer must be a JSON error in OpenAI's shape, 4xx (429 included).
async function checkError(kind, r) {
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch { /* checked below */ }
  if (r.status >= 500) return fail(kind, `status ${r.status}: ${text.slice(0, 200)}`);
  if (typeof body?.error?.message !== 'string') return fail(kind, `status ${r.status} without a JSON error: ${text.slice(0, 200)}`);
  if (r.status === 429 && r.headers.get('retry-after') === null) return fail(kind, '429 without Retry-After');
  note(kind, r.status);
}

// The openai client's outcome: 2xx, or an APIError with its status (429 expected).
async function viaClient(kind, fn) {
  try {
    await fn();
    note(kind, 200);
  } catch (e) {
    if (e instanceof OpenAI.APIError && e.status >= 400 && e.status < 500) note(kind, e.status);
    else fail(kind, String(e));
  }
}

async function post(kind, pathname, body, headers = { 'Content-Type': 'application/json' }) {
  try {
    const r = await fetch(`${url}${pathname}`, { method: 'POST', body, headers });
    if (r.ok) {
      JSON.parse(await r.text());
      note(kind, r.status);
    } else {
      await checkError(kind, r);
    }
  } catch (e) {
    fail(kind, String(e));
  }
}

const chat = (n) => [{ role: 'user', content: `Tell me one fact about the number ${n}.` }];
const kinds = [
  ['stream', 4, (n) => viaClient('stream', async () => {
    const s = await client.chat.completions.create({ messages: chat(n), max_tokens: 8 + (n % 24), stream: true });
    let finish = null;
    for await (const c of s) finish = c.choices[0]?.finish_reason ?? finish;
    if (!finish) throw new Error('a stream ended without finish_reason');
  })],
  ['chat', 3, (n) => viaClient('chat', async () => {
    const r = await client.chat.completions.create({ messages: chat(n), max_tokens: 8 + (n % 16) });
    if (!r.choices[0].finish_reason) throw new Error('no finish_reason');
  })],
  ['completion', 2, (n) => viaClient('completion', async () => {
    const r = await client.completions.create({ prompt: `Fact ${n}:`, max_tokens: 12 });
    if (typeof r.choices[0].text !== 'string') throw new Error('no text');
  })],
  ['cancel', 2, async (n) => {
    // Aborted by us after two chunks: the server must cancel the generation.
    const controller = new AbortController();
    try {
      const s = await client.chat.completions.create(
        { messages: chat(n), max_tokens: 48, stream: true, logit_bias: { 0: -100, 2: -100 } },
        { signal: controller.signal });
      let chunks = 0;
      for await (const _ of s) if (++chunks === 2) controller.abort();
      // The client's iteration ends quietly once aborted.
      note('cancel', controller.signal.aborted ? 'cancelled' : 'finished before the cancel');
    } catch (e) {
      if (controller.signal.aborted) note('cancel', 'cancelled');
      else if (e instanceof OpenAI.APIError && e.status === 429) note('cancel', 429);
      else fail('cancel', String(e));
    }
  }],
  ['embeddings', 2, (n) => viaClient('embeddings', async () => {
    const r = await client.embeddings.create({ input: [`text ${n}`, 'another text'] });
    if (r.data.length !== 2) throw new Error('wrong number of embeddings');
  })],
  ['bad_json', 1, () => post('bad_json', '/v1/chat/completions', '{"messages": [')],
  ['bad_field', 1, () => post('bad_field', '/v1/chat/completions', JSON.stringify({ messages: 'hello', temperature: 'hot' }))],
  ['over_limit', 1, (n) => post('over_limit', '/v1/chat/completions', JSON.stringify({ messages: chat(n), max_tokens: 100000 }))],
  ['huge_body', 1, () => post('huge_body', '/v1/completions', JSON.stringify({ prompt: 'x'.repeat(1100000) }))],
  ['get', 2, async (n) => {
    const p = ['/health', '/metrics', '/v1/models', '/no/such/path'][n % 4];
    try {
      const r = await fetch(`${url}${p}`);
      if (r.ok) { await r.text(); note('get', r.status); } else await checkError('get', r);
    } catch (e) {
      fail('get', String(e));
    }
  }],
];
const totalWeight = kinds.reduce((s, k) => s + k[1], 0);
const pick = () => {
  let x = Math.random() * totalWeight;
  for (const k of kinds) if ((x -= k[1]) < 0) return k;
  return kinds[0];
};

const t0 = Date.now();
const endAt = t0 + minutes * 60000;
const warmupMs = Math.min(60000, minutes * 60000 * 0.25);
const idleFds = fdCount();
const samples = [];
const sampler = setInterval(() => samples.push({ t: Date.now() - t0, rss: rssKiB(), fds: fdCount() }), 5000);
let n = 0;
await Promise.all(Array.from({ length: workers }, async () => {
  while (Date.now() < endAt) await pick()[2](n++);
}));
clearInterval(sampler);
// Idle keep-alive connections close after 5 s.
await sleep(7000);
const endFds = fdCount();
const endRss = rssKiB();

const afterWarmup = samples.filter((s) => s.t >= warmupMs);
const base = afterWarmup[0] ?? samples[samples.length - 1];
const maxRss = Math.max(...afterWarmup.map((s) => s.rss), endRss);
const growthMiB = (maxRss - base.rss) / 1024;
const maxFds = Math.max(...samples.map((s) => s.fds));
console.log(`soak: ${n} requests in ${((Date.now() - t0) / 60000).toFixed(1)} min from ${workers} workers`);
for (const [kind, byStatus] of Object.entries(counts)) {
  console.log(`  ${kind.padEnd(11)} ${Object.entries(byStatus).map(([s, c]) => `${s}: ${c}`).join(', ')}`);
}
console.log(`  RSS: ${(base.rss / 1024).toFixed(1)} MiB after the warm-up (${(warmupMs / 1000).toFixed(0)} s), ` +
  `max ${(maxRss / 1024).toFixed(1)} MiB, end ${(endRss / 1024).toFixed(1)} MiB: growth ${growthMiB.toFixed(1)} MiB ` +
  `(bound ${rssBoundMiB})`);
console.log(`  open fds: ${idleFds} before, max ${maxFds} under load, ${endFds} after (bound: before + 2)`);
let ok = true;
if (failures.length) {
  ok = false;
  console.log(`soak: FAIL: ${Object.values(counts).reduce((s, c) => s + (c.FAIL ?? 0), 0)} bad answers, e.g.:`);
  for (const f of failures) console.log(`  ${f}`);
}
if (growthMiB > rssBoundMiB) { ok = false; console.log(`soak: FAIL: RSS grew ${growthMiB.toFixed(1)} MiB after the warm-up`); }
if (endFds > idleFds + 2) { ok = false; console.log(`soak: FAIL: ${endFds} open fds after the traffic, ${idleFds} before`); }
for (const k of ['stream', 'chat', 'embeddings', 'cancel']) {
  if (!counts[k]?.[200] && !counts[k]?.cancelled) { ok = false; console.log(`soak: FAIL: no successful ${k} request`); }
}
if (!Object.values(counts).some((c) => c[429])) console.log('soak: note: no request got 429 (the queue never filled)');
console.log(ok ? 'soak: PASS' : 'soak: FAIL');
process.exit(ok ? 0 : 1);
