// runnel serve with a mixture-of-experts model under a --mem-budget that holds all but
// its experts (a tiny random-weight qwen3moe written by `runnel synth-model`): the
// experts stream through the expert cache, the startup line says so, a chat reply is the
// resident server's, and /metrics counts the cache's hits, misses and bytes read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { binary, parseMetrics, startServerWithClient, stopServerCleanly } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const vocab = path.join(process.env.RUNNEL_TEST_DATA ?? path.join(root, 'tests/data'), 'tokenizer',
                        'ggml-vocab-gpt-2.gguf');
const messages = [{ role: 'user', content: 'Tell me about rivers and the sea.' }];

let dir;
let file;

// The dry run's plan row `NAME  12.3 MiB` in bytes.
function planBytes(plan, name) {
  const m = plan.match(new RegExp(`^\\s*${name}\\s+([\\d.]+) (MiB|GiB)`, 'm'));
  assert.ok(m, `no ${name} row in:\n${plan}`);
  return Number(m[1]) * (m[2] === 'GiB' ? 2 ** 30 : 2 ** 20);
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'runnel-experts-server-'));
  file = path.join(dir, 'tiny-qwen3moe.gguf');
  execFileSync(binary, ['synth-model', '--shape', 'tiny-qwen3moe', '--tokenizer-from', vocab, '-o', file],
               { stdio: ['ignore', 'ignore', 'pipe'] });
});

after(() => dir && rmSync(dir, { recursive: true, force: true }));

async function reply(client) {
  const r = await client.chat.completions.create({ model: 'tiny-qwen3moe.gguf', messages, max_tokens: 16, temperature: 0,
                                                   logit_bias: { 0: -100 } });
  return r.choices[0].message.content;
}

test('experts streamed under --mem-budget: the resident reply, and the cache in /metrics', async () => {
  const args = ['-t', '2', '-c', '256', '--lookup-ngram', '0'];
  const plan = execFileSync(binary, ['serve', '-m', file, ...args, '--dry-run'], { encoding: 'utf8' });
  const total = planBytes(plan, 'total'), experts = planBytes(plan, 'experts');
  // Room for everything but half the experts: the plan streams experts, not layers.
  const budget = Math.floor(total - experts / 2);

  const resident = await startServerWithClient(args, { modelPath: file });
  let expected;
  try {
    expected = await reply(resident.client);
    const metrics = parseMetrics(await (await fetch(`${resident.server.url}/metrics`)).text());
    assert.equal(metrics.runnel_expert_cache_hits_total, undefined, 'no cache, no cache metrics');
  } finally {
    await stopServerCleanly(resident.server);
  }

  const { server, client } = await startServerWithClient([...args, '--mem-budget', String(budget)], { modelPath: file });
  try {
    assert.match(server.stderr(), /experts streamed, a cache of \d+ of 32/);
    assert.equal(await reply(client), expected);
    const m = parseMetrics(await (await fetch(`${server.url}/metrics`)).text());
    assert.ok(m.runnel_expert_cache_slots >= 8 && m.runnel_expert_cache_slots < 32, JSON.stringify(m));
    assert.ok(m.runnel_expert_cache_misses_total > 0);
    assert.ok(m.runnel_expert_cache_hits_total + m.runnel_expert_cache_misses_total >= 16 * 2 * 4,
              'every token picks 4 experts in each of 2 layers');
    assert.ok(m.runnel_expert_read_bytes_total > 0);
  } finally {
    await stopServerCleanly(server);
  }
});
