// Embedding parity on tiny random-weight embedding models (bert: BGE / MiniLM style;
// nomic-bert: nomic-embed-text style) written by `runnel synth-model` with a real
// WordPiece vocabulary (tests/data/tokenizer/ggml-vocab-bert-bge.gguf), for each
// pooling the model states: `runnel embed` against llama.cpp's embedding context
// (node-llama-cpp createEmbeddingContext / getEmbeddingFor). No downloaded model.
//
// Like with like: llama.cpp's API returns the pooled vector as is (node-llama-cpp's
// getEmbedding copies llama_get_embeddings_seq), so runnel's is taken with
// --no-normalize; the normalized output (what POST /v1/embeddings serves) must then be
// that vector at unit length. Token counts must agree ([CLS] text [SEP] on both sides).
//
// Bounds, per text: cosine similarity > kMinCosine and max |diff| < kMaxAbsDiff. The
// vectors' elements are ~N(0, 1) (the last LayerNorm's output; norms ~15 for 256
// dimensions). Measured (x86-64 AVX-512 host, node-llama-cpp 3.22.1, llama.cpp's CPU build; runnel's
// avx512, avx2 and ref kernels): cosine >= 1 - 1.5e-6 and max |diff| <= 0.0049 (tiny-bert
// 0.0005..0.0019, tiny-nomic-bert 0.0013..0.0049, its cls pooling the largest), most of
// it runnel's f16 KV cache and f16-rounded queries and probabilities against llama.cpp's
// f32 attention for these models, and Q8_0 activations at the Q8_0 matrices. The bounds
// leave 2x (max |diff|) and 6x (1 - cosine) room. A real slip is far outside them: the
// same tiny-bert's [CLS] and mean poolings of one text differ by a cosine of 1 - 0.015
// and a max |diff| of 0.49.
import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import path from "node:path";
import {after, before, describe, test} from "node:test";

import {missingArchPrerequisite} from "./lib/arch_models.mjs";
import {parityIsas, repoRoot, runRunnel} from "./lib/peers.mjs";

const kMinCosine = 0.99999;
const kMaxAbsDiff = 0.01;
const kContext = 512;
const tokenizer = path.join(process.env.RUNNEL_TEST_DATA ?? path.join(repoRoot, "tests/data"), "tokenizer",
                            "ggml-vocab-bert-bge.gguf");
const skip = missingArchPrerequisite() ?? false;

// One short text, one with punctuation, digits and accents (WordPiece pieces), one
// long enough that attention spreads over ~60 tokens.
const TEXTS = [
  "Hello world",
  "Crème brûlée costs $4.50 at 10:30, isn't that naïve?",
  "The quick brown fox jumps over the lazy dog. Embeddings map sentences to vectors so that " +
      "similar meanings land close together; a retrieval system compares them by cosine similarity " +
      "to find the passages that answer a question.",
];

// [shape, pooling]: each family with its real pooling first (BGE: cls, nomic: mean).
const CASES = [
  ["tiny-bert", "cls"], ["tiny-bert", "mean"], ["tiny-bert", "last"],
  ["tiny-nomic-bert", "mean"], ["tiny-nomic-bert", "cls"],
];

function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; ++i) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return dot / Math.sqrt(na * nb);
}

function maxAbsDiff(a, b) {
  let max = 0;
  for (let i = 0; i < a.length; ++i) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

async function runnelEmbed(file, texts, {normalize, isa}) {
  const args = ["embed", "-m", file, "-c", String(kContext), "-t", "2", ...texts.flatMap(t => ["-p", t])];
  if (!normalize) args.push("--no-normalize");
  return JSON.parse((await runRunnel(args, {env: isa ? {RUNNEL_ISA: isa} : undefined})).stdout.toString("utf8"));
}

describe("embeddings of tiny bert and nomic-bert models match llama.cpp", {skip}, () => {
  let llama, dir;
  before(async () => {
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    llama = await getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: 2,
                            logLevel: LlamaLogLevel.error});
    dir = await mkdtemp(path.join(tmpdir(), "runnel-embed-"));
  });
  after(async () => { if (dir) await rm(dir, {recursive: true, force: true}); });

  for (const [shape, pooling] of CASES) {
    test(`${shape}, ${pooling} pooling`, async (t) => {
      const file = path.join(dir, `${shape}-${pooling}.gguf`);
      await runRunnel(["synth-model", "--shape", shape, "--pooling", pooling, "--seed", "1",
                       "--tokenizer-from", tokenizer, "-o", file]);
      let model;
      try {
        model = await llama.loadModel({modelPath: file});
      } catch (e) {
        assert.fail(`llama.cpp refuses ${shape} (a bug in runnel synth-model's writer): ${e.message}`);
      }
      try {
        const context = await model.createEmbeddingContext({contextSize: kContext, threads: 2});
        const expected = [];
        for (const text of TEXTS) expected.push(Array.from((await context.getEmbeddingFor(text)).vector));
        await context.dispose();
        // llama.cpp's vectors must say something: finite, of the model's width, and
        // different for different texts (else the writer, not runnel, is at fault).
        for (const v of expected) {
          assert.equal(v.length, 256);
          assert.ok(v.every(Number.isFinite), `${shape}: llama.cpp's embedding is not finite`);
        }
        assert.ok(cosine(expected[0], expected[1]) < 0.99, `${shape}: llama.cpp gives near-identical embeddings`);
        const problems = [];
        for (const isa of parityIsas()) {
          const label = isa ? `[${isa}] ` : "";
          const raw = await runnelEmbed(file, TEXTS, {normalize: false, isa});
          const unit = await runnelEmbed(file, TEXTS, {normalize: true, isa});
          assert.equal(raw.pooling, pooling);
          assert.equal(raw.normalized, false);
          assert.equal(unit.normalized, true);
          TEXTS.forEach((text, i) => {
            const what = `${label}${shape} ${pooling} text ${i}`;
            const r = raw.data[i].embedding, l = expected[i];
            assert.equal(r.length, l.length, `${what}: dimensions`);
            assert.equal(raw.data[i].n_tokens, model.tokenize(text).length + 2, `${what}: [CLS] tokens [SEP]`);
            const cos = cosine(r, l), diff = maxAbsDiff(r, l);
            const norm = Math.hypot(...r);
            t.diagnostic(`${what}: ${raw.data[i].n_tokens} tokens, cosine 1 - ${(1 - cos).toExponential(2)}, ` +
                         `max |diff| ${diff.toFixed(5)}, |v| ${norm.toFixed(3)} (llama.cpp ${Math.hypot(...l).toFixed(3)})`);
            if (!(cos > kMinCosine)) problems.push(`${what}: cosine ${cos} <= ${kMinCosine}`);
            if (!(diff < kMaxAbsDiff)) problems.push(`${what}: max |diff| ${diff} >= ${kMaxAbsDiff}`);
            // the normalized output is the raw vector at unit length
            const u = unit.data[i].embedding;
            assert.ok(Math.abs(Math.hypot(...u) - 1) < 1e-6, `${what}: normalized length ${Math.hypot(...u)}`);
            assert.ok(maxAbsDiff(u, r.map(x => x / norm)) < 1e-6, `${what}: normalized != raw / |raw|`);
          });
        }
        if (problems.length > 0) assert.fail(problems.join("\n"));
      } finally {
        await model.dispose();
      }
    });
  }
});
