// Tiny random-weight models of every architecture family runnel runs, written by
// `runnel synth-model` (native/cli/synth_shapes.cpp says what each holds), and the
// logits of both peers at every prompt position. Used by arch.test.mjs.
import {existsSync} from "node:fs";
import {readFile} from "node:fs/promises";
import path from "node:path";

import {repoRoot, runnelBin, runRunnel} from "./peers.mjs";

export {parityIsas} from "./peers.mjs";

// RUNNEL_TEST_DATA: tests/data of the checkout (test.sh sets it for its copy of the suite).
const tokenizerDir = path.join(process.env.RUNNEL_TEST_DATA ?? path.join(repoRoot, "tests/data"), "tokenizer");

// One entry per architecture: the synth-model shape, the vocab-only GGUF its tokenizer
// comes from (tests/data/tokenizer, llama.cpp's own test vocabularies: SPM for the
// Llama 2 / Mistral / Gemma / Phi-3 style models, byte-level BPE for Qwen3), and what
// llama.cpp does with the family's sliding window and rope factors:
// - window: the model's attention.sliding_window;
// - windowIgnoredByLlamaCpp: llama.cpp reads no sliding window for the llama
//   architecture, so it attends to every position; only positions < window (where a
//   window changes nothing) are held to the bounds, the rest are printed;
// - contexts: the context sizes to compare at (llama.cpp rounds a context up to a
//   multiple of 256). tiny-phi3's original context is 256: at 256 llama.cpp uses the
//   short LongRoPE factors, at 512 the long ones.
// RUNNEL_PARITY_ARCHS=tiny-qwen3,tiny-gemma3 runs a subset; RUNNEL_SYNTH_TYPE=f32 (or
// f16, q8_0, ...) writes the models with another synth-model --type than its mix.
export const ARCHS = [
  {shape: "tiny-llama", vocab: "llama-spm"},
  {shape: "tiny-llama-swa", vocab: "llama-spm", window: 16, windowIgnoredByLlamaCpp: true},
  {shape: "tiny-qwen3", vocab: "gpt-2"},
  {shape: "tiny-gemma", vocab: "llama-spm"},
  {shape: "tiny-gemma2", vocab: "llama-spm", window: 12},
  {shape: "tiny-gemma3", vocab: "llama-spm", window: 16},
  {shape: "tiny-phi3", vocab: "phi-3", contexts: [256, 512]},
  // mixture of experts
  {shape: "tiny-mixtral", vocab: "llama-spm"},
  {shape: "tiny-qwen2moe", vocab: "gpt-2"},
  {shape: "tiny-qwen3moe", vocab: "gpt-2"},
  {shape: "tiny-olmoe", vocab: "llama-spm"},
  {shape: "tiny-gpt-oss", vocab: "gpt-2", window: 16},
];

export function selectedArchs() {
  const only = process.env.RUNNEL_PARITY_ARCHS;
  if (!only) return ARCHS;
  const names = only.split(",").map(s => s.trim()).filter(Boolean);
  const unknown = names.filter(n => !ARCHS.some(a => a.shape === n));
  if (unknown.length) throw new Error(`RUNNEL_PARITY_ARCHS: unknown ${unknown.join(", ")}`);
  return ARCHS.filter(a => names.includes(a.shape));
}

// Why the suite cannot run, or null.
export function missingArchPrerequisite() {
  if (!existsSync(runnelBin)) return `no runnel binary at ${runnelBin} (build it or set RUNNEL_BIN)`;
  if (!existsSync(tokenizerDir)) return `no tokenizer vocabularies at ${tokenizerDir}`;
  return null;
}

// Writes the arch's model into `dir` (seeded: the same bytes every run) and returns its path.
export async function writeArchModel(arch, dir, {seed = 1} = {}) {
  const file = path.join(dir, `${arch.shape}.gguf`);
  await runRunnel(["synth-model", "--shape", arch.shape, "--seed", String(seed),
                   ...(process.env.RUNNEL_SYNTH_TYPE ? ["--type", process.env.RUNNEL_SYNTH_TYPE] : []), "--tokenizer-from",
                   path.join(tokenizerDir, `ggml-vocab-${arch.vocab}.gguf`), "-o", file]);
  return file;
}

function floatRows(bytes, nRows, file) {
  if (bytes.length % (4 * nRows) !== 0) {
    throw new Error(`${file}: ${bytes.length} bytes is not ${nRows} rows of float32`);
  }
  const nVocab = bytes.length / 4 / nRows;
  const rows = [];
  for (let r = 0; r < nRows; ++r) {
    const row = new Float32Array(nVocab);
    for (let i = 0; i < nVocab; ++i) row[i] = bytes.readFloatLE(4 * (r * nVocab + i));
    rows.push(row);
  }
  return rows;
}

// runnel's prompt ids (BOS as the model asks), as `runnel run` feeds them.
export async function runnelPromptTokens(modelFile, prompt) {
  const {stdout} = await runRunnel(["tokenize", "-m", modelFile, "-p", prompt, "--ids"]);
  const text = stdout.toString("utf8").trim();
  return text === "" ? [] : text.split(/\s+/).map(Number);
}

// runnel's logits at every prompt position ([n_prompt] Float32Array[n_vocab]) from
// `runnel run --all-logits --dump-logits`, with the kernels `isa` names (null: those
// RUNNEL_ISA picks).
export async function runnelAllLogits(modelFile, prompt, nPrompt, {contextSize, threads = 2, dumpDir, isa = null}) {
  const file = path.join(dumpDir, `${path.basename(modelFile, ".gguf")}-${contextSize}.f32`);
  try {
    await runRunnel(["run", "-m", modelFile, "-p", prompt, "-n", "0", "--temp", "0", "--no-display-prompt",
                     "-c", String(contextSize), "-t", String(threads), "--all-logits", "--dump-logits", file],
                    {env: isa ? {RUNNEL_ISA: isa} : undefined});
  } catch (e) {
    // The command line is long and the same every time: keep runnel's own message.
    throw new Error(`runnel run --all-logits ${e.message.replace(/^runnel .* failed /s, "failed ")}`);
  }
  return floatRows(await readFile(file), nPrompt, file);
}

// llama.cpp's raw logits at every position of `tokens` ([n] Float32Array[n_vocab]),
// all evaluated in one batch as a prompt is.
export async function llamaAllLogits(model, tokens, {contextSize, threads = 2, flashAttention = true}) {
  const context = await model.createContext({contextSize, sequences: 1, threads, flashAttention,
                                             batchSize: Math.max(tokens.length, 1)});
  try {
    const results = await context.getSequence().controlledEvaluate(
        tokens.map(token => [token, {generateNext: {logits: true}}]));
    return tokens.map((_, i) => {
      const logits = results[i]?.next?.logits;
      if (!logits) throw new Error(`node-llama-cpp returned no logits at position ${i}`);
      const row = new Float32Array(logits.size);  // every vocabulary entry, unfiltered
      for (const [token, value] of logits) row[token] = value;
      return row;
    });
  } finally {
    await context.dispose();
  }
}
