// Logit parity at every prompt position on tiny random-weight models of each
// architecture family (tests/parity/lib/arch_models.mjs lists them): runnel
// synth-model writes the GGUF (every weight, norm, q/k-norm and rope factor random,
// F32 / F16 / Q8_0 matrices side by side), llama.cpp (node-llama-cpp) and
// `runnel run --all-logits` evaluate the same prompt tokens in one batch each, and the
// logits of every position are compared. No downloaded model is needed. runnel runs
// with each kernel set RUNNEL_PARITY_ISAS lists (lib/arch_models.mjs parityIsas) against
// one evaluation of llama.cpp's.
//
// llama.cpp must load every file and give finite, varied logits: a file it refuses or
// answers with constant logits is a bug in the writer, not a pass.
//
// Bounds, per position, against the nearer of llama.cpp's two CPU attention paths
// (flash, node-llama-cpp's default, and plain), as logits.test.mjs does:
// - max |diff| over the vocabulary < max(kMaxAbsDiff, kSpreadScale x llama.cpp's own
//   flash-vs-plain max |diff| on that prompt);
// - mean |diff| < max(kMaxMeanAbsDiff, kSpreadScale x its own mean |diff|);
// - the same top-1 token wherever llama.cpp's top-2 margin is above kMinMargin.
// These logits have a standard deviation of ~2. Measured (2026-11, x86-64 AVX-512 host;
// runnel's ref, avx2 and avx512 kernels): tiny-llama max |diff| 0.027..0.040 to the
// plain path, 0.049..0.069 to the flash path, mean |diff| <= 0.011, against llama.cpp's
// zen4 and haswell builds, whose own flash vs plain spread is 0.049..0.067; the other
// families the same (qwen3 0.030, gemma 0.042, gemma2 0.051, gemma3 0.047 to the
// nearer path; the mixture-of-experts shapes 0.025..0.040, whose routers are wide enough
// that rounding never flips a pick). Most of it is Q8_0 activation rounding at the output matrix (F16 and
// F32 matrices alone give 0.005). A 10% error in the attention scale moves logits by
// 0.1..0.6 (measured by scaling attn_q of tiny-llama and tiny-gemma by 1.1; 0.1..0.16
// under gemma2's soft-caps), a wrong norm, rope or window by whole units.
import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import path from "node:path";
import {after, before, describe, test} from "node:test";

import {llamaAllLogits, missingArchPrerequisite, parityIsas, runnelAllLogits, runnelPromptTokens,
        selectedArchs, writeArchModel} from "./lib/arch_models.mjs";
import {llamaPromptTokens, topK} from "./lib/peers.mjs";
import {ARCH_PROMPTS} from "./lib/prompts.mjs";

const kMaxAbsDiff = 0.08;
const kMaxMeanAbsDiff = 0.01;
const kSpreadScale = 1.5;
const kMinMargin = 0.1;
const kDefaultContext = 512;
const skip = missingArchPrerequisite() ?? false;

// {max, mean, at}: the largest and mean |a - b| and where the largest is.
function distance(a, b) {
  let max = 0, sum = 0, at = 0;
  for (let i = 0; i < a.length; ++i) {
    const d = Math.abs(a[i] - b[i]);
    sum += d;
    if (d > max) { max = d; at = i; }
  }
  return {max, mean: sum / a.length, at};
}

function margin(row) {
  const [a, b] = topK(row, 2);
  return row[a] - row[b];
}

// llama.cpp's logits must say something: finite, spread out, and not the same
// prediction at every position (else the writer, not runnel, is at fault).
function checkInformative(rows, what) {
  rows.forEach((row, i) => {
    const bad = row.findIndex(x => !Number.isFinite(x));
    assert.equal(bad, -1, `${what}: logit ${bad} at position ${i} is ${row[bad]}`);
    let sum = 0, sq = 0;
    for (const x of row) { sum += x; sq += x * x; }
    const sd = Math.sqrt(sq / row.length - (sum / row.length) ** 2);
    assert.ok(sd > 0.5, `${what}: logits at position ${i} nearly constant (sd ${sd.toFixed(4)})`);
  });
  const tops = new Set(rows.map(row => topK(row, 1)[0]));
  assert.ok(tops.size >= rows.length / 3, `${what}: only ${tops.size} distinct top-1 tokens in ${rows.length} positions`);
}

// Per-position comparison of runnel's rows with one llama.cpp path over positions
// [0, n): the failures (strings) and the worst figures.
function compare(actual, expected, n, bounds) {
  const failed = [];
  let worst = {max: 0, mean: 0, at: 0, pos: 0}, nTop1 = 0;
  for (let pos = 0; pos < n; ++pos) {
    const d = distance(actual[pos], expected[pos]);
    if (d.max > worst.max) worst = {...worst, max: d.max, at: d.at, pos};
    worst.mean = Math.max(worst.mean, d.mean);
    if (!(d.max < bounds.max)) {
      failed.push(`position ${pos}: max |diff| ${d.max.toFixed(4)} at token ${d.at} ` +
                  `(runnel ${actual[pos][d.at].toFixed(4)}, llama.cpp ${expected[pos][d.at].toFixed(4)})`);
    }
    if (!(d.mean < bounds.mean)) failed.push(`position ${pos}: mean |diff| ${d.mean.toFixed(4)}`);
    if (margin(expected[pos]) > kMinMargin) {
      ++nTop1;
      const [r, l] = [topK(actual[pos], 1)[0], topK(expected[pos], 1)[0]];
      if (r !== l) failed.push(`position ${pos}: top-1 runnel ${r}, llama.cpp ${l}`);
    }
  }
  return {failed, worst, nTop1};
}

// The largest per-position distance between two sets of rows over positions [from, to).
function spread(a, b, from, to) {
  let max = 0, mean = 0;
  for (let pos = from; pos < to; ++pos) {
    const d = distance(a[pos], b[pos]);
    max = Math.max(max, d.max);
    mean = Math.max(mean, d.mean);
  }
  return {max, mean};
}

describe("logits at every position of tiny models of each architecture match llama.cpp", {skip}, () => {
  let llama, dir;
  before(async () => {
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    llama = await getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: 2,
                            logLevel: LlamaLogLevel.error});
    dir = await mkdtemp(path.join(tmpdir(), "runnel-arch-"));
  });
  after(async () => { if (dir) await rm(dir, {recursive: true, force: true}); });

  const isas = parityIsas();
  for (const arch of selectedArchs()) {
    test(arch.shape, async (t) => {
      const file = await writeArchModel(arch, dir);
      let model;
      try {
        model = await llama.loadModel({modelPath: file});
      } catch (e) {
        assert.fail(`llama.cpp refuses ${arch.shape} (a bug in runnel synth-model's writer): ${e.message}`);
      }
      const problems = [];
      let refused = false;  // runnel refused the model under some kernel set
      try {
        prompts: for (const contextSize of arch.contexts ?? [kDefaultContext]) {
          for (const [name, prompt] of ARCH_PROMPTS) {
            const what = `${arch.shape} "${name}" (context ${contextSize})`;
            const tokens = llamaPromptTokens(model, prompt);
            assert.deepEqual(await runnelPromptTokens(file, prompt), tokens, `${what}: prompt tokens`);
            // llama.cpp's evaluations are most of this test's time: its plain path first,
            // its flash path only for a kernel set that the floors alone do not pass (the
            // bounds are never below the floors, so such a set passes either way).
            const plain = await llamaAllLogits(model, tokens, {contextSize, flashAttention: false});
            checkInformative(plain, `llama.cpp on ${what}`);
            let flash = null;
            for (const isa of isas) {
              const label = isa ? `${what} [${isa}]` : what;
              let actual = null;
              try {
                actual = await runnelAllLogits(file, prompt, tokens.length, {contextSize, dumpDir: dir, isa});
              } catch (e) {
                problems.push(`${label}: ${e.message.trim()}`);
                refused = true;  // the same for every prompt
                continue;
              }
              const bad = actual.findIndex(row => row.some(x => !Number.isFinite(x)));
              assert.equal(bad, -1, `${label}: runnel logits at position ${bad} are not finite`);

              // Positions past a window llama.cpp ignores are only printed.
              const n = arch.windowIgnoredByLlamaCpp ? Math.min(arch.window, tokens.length) : tokens.length;
              const beyond = n < tokens.length ? spread(actual, plain, n, tokens.length) : null;
              const past = beyond ? `; past the window (llama.cpp attends to all): max |diff| ${beyond.max.toFixed(4)}` : "";
              const floors = {max: kMaxAbsDiff, mean: kMaxMeanAbsDiff};
              const first = compare(actual, plain, n, floors);
              if (first.failed.length === 0) {
                t.diagnostic(`${label}: ${tokens.length} tokens, ${n} compared; vs plain: max |diff| ` +
                             `${first.worst.max.toFixed(4)} (position ${first.worst.pos}), mean ${first.worst.mean.toFixed(4)}, ` +
                             `top-1 checked at ${first.nTop1}; within the floors (max ${kMaxAbsDiff}, mean ${kMaxMeanAbsDiff})` + past);
                continue;
              }
              flash ??= await llamaAllLogits(model, tokens, {contextSize, flashAttention: true});
              const own = spread(flash, plain, 0, n);
              const bounds = {max: Math.max(kMaxAbsDiff, kSpreadScale * own.max),
                              mean: Math.max(kMaxMeanAbsDiff, kSpreadScale * own.mean)};
              const paths = [["flash", flash], ["plain", plain]].map(
                  ([p, rows]) => ({p, ...compare(actual, rows, n, bounds)}));
              t.diagnostic(`${label}: ${tokens.length} tokens, ${n} compared; ` +
                           paths.map(r => `vs ${r.p}: max |diff| ${r.worst.max.toFixed(4)} (position ${r.worst.pos}), ` +
                                          `mean ${r.worst.mean.toFixed(4)}, top-1 checked at ${r.nTop1}`).join("; ") +
                           `; llama.cpp flash vs plain max ${own.max.toFixed(4)}; bounds max ${bounds.max.toFixed(3)}, ` +
                           `mean ${bounds.mean.toFixed(3)}` + past);
              if (paths.every(r => r.failed.length > 0)) {
                const best = paths.reduce((a, b) => (a.failed.length <= b.failed.length ? a : b));
                problems.push(`${label}: ${best.failed.length} failures against llama.cpp's ${best.p} path, first: ` +
                              best.failed.slice(0, 4).join("; "));
              }
            }
            if (refused) break prompts;
          }
        }
      } finally {
        await model.dispose();
      }
      if (problems.length > 0) assert.fail(problems.join("\n"));
    });
  }
});
