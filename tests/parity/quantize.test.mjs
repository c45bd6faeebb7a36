// Files `runnel quantize` writes load in llama.cpp and answer there as in runnel: the
// default model (SmolLM2 Q4_1) is requantized to F16, then quantized to Q8_0, Q4_K_M
// and IQ4_XS, and Q8_0 once more as a three-part split set. For each file, llama.cpp
// (node-llama-cpp) must load it, and its first-position logits on the LOGIT_PROMPTS must
// be within the bounds logits.test.mjs holds runnel's to on the original file (of either
// llama.cpp attention path): top-1 equal where llama.cpp's top-2 margin is above
// kMinMargin, KL < max(0.01, 2 x llama.cpp's own flash vs plain KL), max |diff| (shift
// removed) < max(1.0, 1.5 x its own). A writer bug (a wrong
// type id, offset, block layout or scale) makes llama.cpp refuse the file or moves
// logits by whole units.
import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import path from "node:path";
import {after, before, describe, test} from "node:test";

import {missingPrerequisite, modelPath, parityIsas, runRunnel, topK} from "./lib/peers.mjs";
import {LOGIT_PROMPTS} from "./lib/prompts.mjs";

const kMaxAbsDiff = 1.0;
const kMaxKl = 0.01;
const kSpreadScale = 1.5;
const kKlSpreadScale = 2;
// A near-tie: ref kernels (f32 activations, not Q8_K) turn the IQ4_XS "chat" prompt's
// 0.13 margin into 0.05 for the other token; a writer bug moves logits by whole units.
const kMinMargin = 0.25;
const skip = missingPrerequisite() ?? false;

// Largest |a - b| once the mean difference (a shift no probability sees) is removed.
function maxDiff(a, b) {
  let shift = 0;
  for (let i = 0; i < a.length; ++i) shift += a[i] - b[i];
  shift /= a.length;
  let max = 0;
  for (let i = 0; i < a.length; ++i) max = Math.max(max, Math.abs(a[i] - b[i] - shift));
  return max;
}

// How far llama.cpp's first choice leads its second, in logits.
function margin(row) {
  const [a, b] = topK(row, 2);
  return row[a] - row[b];
}

function klDivergence(p, q) {
  const lse = v => { let m = -Infinity; for (const x of v) m = Math.max(m, x);
                     let s = 0; for (const x of v) s += Math.exp(x - m); return m + Math.log(s); };
  const lp = lse(p), lq = lse(q);
  let kl = 0;
  for (let i = 0; i < p.length; ++i) kl += Math.exp(p[i] - lp) * ((p[i] - lp) - (q[i] - lq));
  return Math.max(kl, 0);
}

async function llamaLogitsOf(model, tokens, flashAttention) {
  const context = await model.createContext({contextSize: 512, sequences: 1, threads: 2, flashAttention});
  try {
    const input = [...tokens.slice(0, -1), [tokens.at(-1), {generateNext: {logits: true}}]];
    const logits = (await context.getSequence().controlledEvaluate(input)).at(-1)?.next?.logits;
    if (!logits) throw new Error("node-llama-cpp returned no logits");
    const out = new Float32Array(logits.size);
    for (const [token, value] of logits) out[token] = value;
    return out;
  } finally {
    await context.dispose();
  }
}

async function runnelLogitsOf(file, prompt, special, dir, isa) {
  const dump = path.join(dir, "logits.f32");
  const args = ["run", "-m", file, "-p", prompt, "-n", "1", "--temp", "0", "--no-display-prompt",
                "-t", "2", "--dump-logits", dump];
  if (special) args.push("--special");
  await runRunnel(args, {env: isa ? {RUNNEL_ISA: isa} : undefined});
  const bytes = await (await import("node:fs/promises")).readFile(dump);
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; ++i) out[i] = bytes.readFloatLE(4 * i);
  return out;
}

describe("files runnel quantize writes load in llama.cpp and answer alike", {skip}, () => {
  let dir, llama;
  const files = {};
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "runnel-quantize-"));
    files.F16 = path.join(dir, "smol-f16.gguf");
    await runRunnel(["quantize", "--allow-requantize", modelPath, files.F16, "F16"]);
    for (const type of ["Q8_0", "Q4_K_M", "IQ4_XS"]) {
      files[type] = path.join(dir, `smol-${type}.gguf`);
      await runRunnel(["quantize", files.F16, files[type], type]);
    }
    await runRunnel(["quantize", files.F16, path.join(dir, "split.gguf"), "Q8_0", "--split-max-tensors", "100"]);
    files["Q8_0 split"] = path.join(dir, "split-00001-of-00003.gguf");
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    llama = await getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: 2,
                            logLevel: LlamaLogLevel.error});
  });
  after(async () => { if (dir) await rm(dir, {recursive: true, force: true}); });

  for (const type of ["Q8_0", "Q4_K_M", "IQ4_XS", "Q8_0 split"]) {
    test(type, async (t) => {
      const model = await llama.loadModel({modelPath: files[type]});
      try {
        for (const [name, prompt, special] of LOGIT_PROMPTS) {
          const tokens = model.tokenize(prompt, special);
          const withBos = model.tokens.shouldPrependBosToken && model.tokens.bos != null
              ? [model.tokens.bos, ...tokens] : tokens;
          const flash = await llamaLogitsOf(model, withBos, true);
          const plain = await llamaLogitsOf(model, withBos, false);
          const bounds = {max: Math.max(kMaxAbsDiff, kSpreadScale * maxDiff(flash, plain)),
                          kl: Math.max(kMaxKl, kKlSpreadScale * klDivergence(flash, plain))};
          for (const isa of parityIsas()) {
            const label = isa ? `[${isa}] ` : "";
            const actual = await runnelLogitsOf(files[type], prompt, special, dir, isa);
            assert.equal(actual.length, flash.length, `${label}${name}: n_vocab`);
            const paths = [["flash", flash], ["plain", plain]].map(([p, expected]) => {
              const d = {max: maxDiff(actual, expected), kl: klDivergence(expected, actual),
                         top1: margin(expected) <= kMinMargin || topK(actual, 1)[0] === topK(expected, 1)[0]};
              return {p, d, ok: d.top1 && d.max < bounds.max && d.kl < bounds.kl};
            });
            t.diagnostic(`${label}${name}: ` +
                         paths.map(({p, d}) => `${p} max ${d.max.toFixed(3)} KL ${d.kl.toExponential(2)}` +
                                               `${d.top1 ? "" : " top-1 differs"}`).join("; ") +
                         `; bounds max ${bounds.max.toFixed(3)} KL ${bounds.kl.toExponential(2)}` +
                         `; llama.cpp top-2 margin flash ${margin(flash).toFixed(3)} plain ${margin(plain).toFixed(3)}` +
                         `; runnel's ${margin(actual).toFixed(3)}`);
            assert.ok(paths.some(x => x.ok), `${label}${type} ${name}: runnel is not within bounds of either ` +
                      `llama.cpp path: ` + paths.map(({p, d}) => `${p} max ${d.max} KL ${d.kl} top1 ${d.top1}`).join("; "));
          }
        }
      } finally {
        await model.dispose();
      }
    });
  }
});
