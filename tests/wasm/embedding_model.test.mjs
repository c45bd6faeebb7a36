// runnel-llm with an embedding model (bert, nomic-bert): random-weight tiny models
// written by the native `runnel synth-model` over a real WordPiece vocabulary, whose
// native embeddings tests/parity/embed.test.mjs checks against llama.cpp. Here
// model.embed must give native `runnel embed`'s vectors (the model's own pooling,
// L2-normalized), and generation must be refused with the core's one-line reason.
// Bounds: with the ref kernels on both sides the same arithmetic runs (measured max
// |diff| 0 on these models), so 1e-6 only absorbs a libm difference in GELU's tanh;
// SIMD128 against AVX2 / AVX-512 sums in other orders: cosine > 0.9999 (measured
// >= 0.999999).
//   RUNNEL_BIN (default build-release/runnel).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, 'build-release/runnel');
const vocab = path.join(root, 'tests/data/tokenizer/ggml-vocab-bert-bge.gguf');
const skip = fs.existsSync(runnelBin) ? false : `no runnel binary at ${runnelBin} (set RUNNEL_BIN)`;

const kTexts = ['Hello world', "Crème brûlée costs $4.50 at 10:30, isn't that naïve?",
  'Embeddings map sentences to vectors so that similar meanings land close together.'];
const kContext = 512;

function nativeIsas() {
  return ['avx2', 'avx512'].filter((isa) => {
    try {
      execFileSync(runnelBin, ['inspect', '--cpu'], { env: { ...process.env, RUNNEL_ISA: isa }, stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}

function nativeEmbed(file, isa) {
  const out = execFileSync(runnelBin, ['embed', '-m', file, '-c', String(kContext), '-t', '1',
    ...kTexts.flatMap((t) => ['-p', t])], { env: { ...process.env, RUNNEL_ISA: isa }, maxBuffer: 1 << 24 });
  return JSON.parse(out.toString('utf8')).data.map((d) => Float32Array.from(d.embedding));
}

const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('runnel-llm embeds with bert and nomic-bert models', { skip }, () => {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-wasm-embed-')); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const shape of ['tiny-bert', 'tiny-nomic-bert']) {
    test(`${shape}: native runnel embed's vectors; generation refused`, async (t) => {
      const file = path.join(dir, `${shape}.gguf`);
      execFileSync(runnelBin, ['synth-model', '--shape', shape, '--tokenizer-from', vocab, '-o', file],
        { stdio: 'ignore' });

      const ref = await loadModel({ path: file }, { contextSize: kContext, isa: 'ref' });
      try {
        const vectors = await ref.embed(kTexts);
        const native = nativeEmbed(file, 'ref');
        for (const [i, v] of vectors.entries()) {
          assert.equal(v.length, ref.info.nEmbd);
          assert.ok(Math.abs(dot(v, v) - 1) < 1e-5, `norm² ${dot(v, v)}`);
          const diff = maxAbsDiff(v, native[i]);
          t.diagnostic(`ref: text ${i} max |diff| ${diff}`);
          assert.ok(diff < 1e-6, `${shape}, text ${i}: max |diff| ${diff} against native ref`);
        }

        // The core refuses generation on an embedding model, in every entry point.
        const session = ref.createSession();
        try {
          const consume = async (it) => { for await (const piece of it) void piece; };
          await assert.rejects(consume(session.generate('Hello', { maxTokens: 4 })), /embedding model/);
          await assert.rejects(consume(session.chat([{ role: 'user', content: 'Hi' }], { maxTokens: 4 })),
            /embedding model|chat template/);
        } finally {
          await session.dispose();
        }
      } finally {
        await ref.dispose();
      }

      const simd = await loadModel({ path: file }, { contextSize: kContext });
      try {
        const vectors = await simd.embed(kTexts);
        for (const isa of nativeIsas()) {
          const native = nativeEmbed(file, isa);
          const cosines = vectors.map((v, i) => dot(v, native[i]));
          t.diagnostic(`SIMD128 vs native ${isa}: cosine ${cosines.map((c) => c.toFixed(7)).join(' ')}`);
          for (const [i, c] of cosines.entries()) assert.ok(c > 0.9999, `${shape} vs ${isa}, text ${i}: cosine ${c}`);
        }
      } finally {
        await simd.dispose();
      }
    });
  }
});
