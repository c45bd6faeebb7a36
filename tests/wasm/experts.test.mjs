// runnel-llm with a mixture-of-experts model under a memoryBudget below its size but
// above what everything but the experts needs: the experts are read from the file into
// the expert cache as the router picks them (ExpertSlots, wasm/src/js_store.cpp), and the
// logits at every prompt position are the resident load's, bit for bit (the cache keeps
// the file's layout; the SIMD128 products give its bits whether repacked or not). Tiny
// random-weight models of each MoE architecture, written by the native
// `runnel synth-model` (RUNNEL_BIN, default build-release/runnel).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';
import { ARCHS, writeArchModel } from '../parity/lib/arch_models.mjs';
import { ARCH_PROMPTS } from '../parity/lib/prompts.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, 'build-release/runnel');
const skipNoBin = !fs.existsSync(runnelBin) && `no runnel binary at ${runnelBin} (set RUNNEL_BIN)`;
const kMoeShapes = new Set(['tiny-mixtral', 'tiny-qwen2moe', 'tiny-qwen3moe', 'tiny-olmoe', 'tiny-gpt-oss']);

function firstDifference(a, b) {
  for (const [pos, row] of a.entries()) {
    const i = row.findIndex((x, j) => !Object.is(x, b[pos][j]));
    if (i >= 0) return `position ${pos}, token ${i}: ${row[i]} vs ${b[pos][i]}`;
  }
  return null;
}

describe('experts streamed through the expert cache', { skip: skipNoBin }, () => {
  let dir;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-wasm-experts-'))));
  after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

  for (const arch of ARCHS.filter((a) => kMoeShapes.has(a.shape))) {
    test(`${arch.shape}: the resident logits at every position, and the same greedy text`, async (t) => {
      const file = await writeArchModel(arch, dir);
      const contextSize = 256;
      const resident = await loadModel({ path: file }, { contextSize, allLogits: true });
      const plan = resident.info.memoryPlan;
      assert.equal(resident.info.expertCacheSlots, 0);
      assert.ok(plan.expertBytes > 0 && plan.expertStreamingBytes > 0 && plan.expertStreamingBytes < plan.totalBytes,
        JSON.stringify(plan));
      // the least that streams experts: the cache gets its fewest slots
      const memoryBudget = plan.expertStreamingBytes;
      const streamed = await loadModel({ path: file }, { contextSize, allLogits: true, memoryBudget });
      try {
        assert.ok(streamed.info.streaming);
        const slots = streamed.info.expertCacheSlots;
        assert.ok(slots > 0, 'an expert cache');
        assert.ok(streamed.info.weightsResidentBytes < resident.info.weightsResidentBytes,
          `${streamed.info.weightsResidentBytes} resident bytes streamed, ${resident.info.weightsResidentBytes} not`);
        for (const [name, prompt] of ARCH_PROMPTS) {
          const a = await resident.createSession().evalLogits(prompt);
          const b = await streamed.createSession().evalLogits(prompt);
          assert.equal(b.length, a.length);
          const diff = firstDifference(b, a);
          assert.equal(diff, null, `"${name}": streamed experts differ from resident at ${diff}`);
        }
        const generate = async (model) => {
          const session = model.createSession();
          let text = '';
          for await (const piece of session.generate(ARCH_PROMPTS[0][1], { temperature: 0, maxTokens: 16 })) text += piece;
          return { text, stats: session.lastStats };
        };
        const r = await generate(resident), s = await generate(streamed);
        assert.equal(s.text, r.text);
        assert.ok(s.stats.expertHitRate >= 0 && s.stats.expertHitRate <= 1, `hit rate ${s.stats.expertHitRate}`);
        assert.ok(s.stats.bytesRead > 0, 'experts read from the file while generating');
        assert.equal(r.stats.expertHitRate, 0);
        t.diagnostic(`${arch.shape}: ${slots} experts cached under ${memoryBudget} bytes; generation hit rate ` +
          `${(100 * s.stats.expertHitRate).toFixed(1)}%, ${s.stats.bytesRead} bytes read`);
      } finally {
        await resident.dispose();
        await streamed.dispose();
      }
    });
  }
});
