// The two sides of every parity check: the runnel CLI (a child process) and llama.cpp
// through node-llama-cpp (its prebuilt CPU binary from @node-llama-cpp/linux-x64).
// Paths come from the environment so CI and developers can point elsewhere:
//   RUNNEL_BIN    runnel binary     (default <repo>/build-release/runnel)
//   RUNNEL_MODEL  GGUF under test   (default <repo>/models/SmolLM2-135M-Instruct.Q4_1.gguf)
import {execFile} from "node:child_process";
import {existsSync} from "node:fs";
import {readFile, mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const modelPath =
    process.env.RUNNEL_MODEL ?? path.join(repoRoot, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
export const runnelBin = process.env.RUNNEL_BIN ?? path.join(repoRoot, "build-release/runnel");

// Why a suite cannot run, or null. Tests pass this to `skip` so the reason is printed.
export function missingPrerequisite() {
  if (!existsSync(modelPath)) return `no model at ${modelPath} (run scripts/fetch_models.sh)`;
  if (!existsSync(runnelBin)) return `no runnel binary at ${runnelBin} (build it or set RUNNEL_BIN)`;
  return null;
}

// Runs `runnel ...args`; resolves {stdout (Buffer), stderr (string), ms}, rejects
// with the command and stderr on a non-zero exit.
// `env`: variables set for this run only (e.g. {RUNNEL_ISA: "ref"}).
export function runRunnel(args, {timeoutMs = 300_000, env} = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(runnelBin, args, {encoding: "buffer", maxBuffer: 64 << 20, timeout: timeoutMs,
                               env: env ? {...process.env, ...env} : process.env},
             (error, stdout, stderr) => {
               const err = stderr.toString("utf8");
               if (error) {
                 reject(new Error(`runnel ${args.map(a => JSON.stringify(a)).join(" ")} failed ` +
                                  `(${error.code ?? error.signal}): ${err}`));
                 return;
               }
               resolve({stdout, stderr: err, ms: performance.now() - started});
             });
  });
}

// `runnel tokenize --ids` output "1 2 3" -> [1, 2, 3].
export function parseIds(stdout) {
  const text = stdout.toString("utf8").trim();
  if (text === "") return [];
  return text.split(/\s+/).map(s => {
    const id = Number(s);
    if (!Number.isInteger(id)) throw new Error(`runnel tokenize printed a non-id '${s}' in '${text}'`);
    return id;
  });
}

export async function runnelTokenize(text, {bos = false, special = false} = {}) {
  const args = ["tokenize", "-m", modelPath, "-p", text, "--ids"];
  if (!bos) args.push("--no-bos");
  if (special) args.push("--special");
  return parseIds((await runRunnel(args)).stdout);
}

// Logits of the first predicted position (after the whole prompt) as runnel dumps
// them: n_vocab float32 little-endian.
// The kernel sets a test runs runnel with, each against one evaluation of llama.cpp's:
// RUNNEL_PARITY_ISAS=ref,avx2,avx512 (test.sh: all the host runs, in one pass, so that
// llama.cpp's share, most of these tests' time, is computed once), else the one
// RUNNEL_ISA names (null: runnel's default choice).
export function parityIsas() {
  const list = (process.env.RUNNEL_PARITY_ISAS ?? "").split(",").map(s => s.trim()).filter(Boolean);
  return list.length > 0 ? list : [process.env.RUNNEL_ISA ?? null];
}
const isaEnv = isa => (isa ? {RUNNEL_ISA: isa} : undefined);

export async function runnelLogits(prompt, {special = false, threads = 2, isa = null} = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), "runnel-parity-"));
  try {
    const file = path.join(dir, "logits.f32");
    const args = ["run", "-m", modelPath, "-p", prompt, "-n", "1", "--temp", "0",
                  "--no-display-prompt", "-t", String(threads), "--dump-logits", file];
    if (special) args.push("--special");
    await runRunnel(args, {env: isaEnv(isa)});
    const bytes = await readFile(file);
    if (bytes.length % 4 !== 0) throw new Error(`${file}: ${bytes.length} bytes, not a float32 array`);
    const out = new Float32Array(bytes.length / 4);
    for (let i = 0; i < out.length; ++i) out[i] = bytes.readFloatLE(4 * i);
    return out;
  } finally {
    await rm(dir, {recursive: true, force: true});
  }
}

// Greedy continuation text: stdout without the prompt echo and without the newline
// `runnel run` always ends its output with (it is not generated text).
export async function runnelGreedy(prompt, nTokens, {special = false, threads = 2, isa = null} = {}) {
  const args = ["run", "-m", modelPath, "-p", prompt, "-n", String(nTokens), "--temp", "0",
                "--repeat-penalty", "1", "--no-display-prompt", "-t", String(threads)];
  if (special) args.push("--special");
  const {stdout, stderr, ms} = await runRunnel(args, {env: isaEnv(isa)});
  const text = stdout.toString("utf8");
  if (!text.endsWith("\n")) throw new Error(`runnel run output lacks its final newline: ${JSON.stringify(text)}`);
  return {text: text.slice(0, -1), stderr, ms};
}

// One llama.cpp model per process; contexts are made per use. `onLog(level, text)`
// (first call only) sees llama.cpp's log from info level on, e.g. its timings.
let llamaModelPromise = null;
export function loadLlamaModel({threads = 2, onLog = null} = {}) {
  llamaModelPromise ??= (async () => {
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    const llama = await getLlama({
      gpu: false, build: "never", skipDownload: true, maxThreads: threads,
      logLevel: onLog ? LlamaLogLevel.info : LlamaLogLevel.error,
      ...(onLog ? {logger: onLog} : {}),
    });
    return llama.loadModel({modelPath});
  })();
  return llamaModelPromise;
}

// The prompt's tokens as llama.cpp feeds them for generation: BOS prepended iff the
// model's metadata asks for it (tokenizer.ggml.add_bos_token), special-token text
// parsed iff `special`.
export function llamaPromptTokens(model, prompt, {special = false} = {}) {
  const tokens = model.tokenize(prompt, special);
  return model.tokens.shouldPrependBosToken && model.tokens.bos != null
      ? [model.tokens.bos, ...tokens] : tokens;
}

// llama.cpp's raw logits for the position after `tokens`, as a Float32Array[n_vocab].
// flashAttention: node-llama-cpp's default on CPU is on; off gives llama.cpp's other
// attention path, whose distance to the default measures llama.cpp's own spread.
export async function llamaLogits(model, tokens, {threads = 2, flashAttention = true} = {}) {
  const context = await model.createContext({contextSize: 512, sequences: 1, threads, flashAttention});
  try {
    const sequence = context.getSequence();
    const input = [...tokens.slice(0, -1),
                   [tokens.at(-1), {generateNext: {logits: true}}]];
    const results = await sequence.controlledEvaluate(input);
    const logits = results.at(-1)?.next?.logits;
    if (!logits) throw new Error("node-llama-cpp returned no logits");
    const out = new Float32Array(logits.size);  // every vocabulary entry, unfiltered
    for (const [token, value] of logits) out[token] = value;
    return out;
  } finally {
    await context.dispose();
  }
}

// llama.cpp's top-2 logit margin at each step of a greedy continuation: margins[i] is
// top1 - top2 at the position that predicted generated[i].
export async function llamaStepMargins(model, promptTokens, generated, {threads = 2} = {}) {
  const context = await model.createContext({contextSize: 512, sequences: 1, threads});
  try {
    const sequence = context.getSequence();
    const all = [...promptTokens, ...generated];
    const first = promptTokens.length - 1;
    const input = all.map((token, i) => (i >= first && i < first + generated.length)
        ? [token, {generateNext: {logits: {filter: {tokens: [], includeTop: 2}}}}] : token);
    const results = await sequence.controlledEvaluate(input);
    return generated.map((_, k) => {
      const [a, b] = [...results[first + k].next.logits.values()].sort((x, y) => y - x);
      return a - b;
    });
  } finally {
    await context.dispose();
  }
}

// llama.cpp's greedy continuation: up to nTokens ids, stopping at an end-of-generation
// token (not included), like runnel's default.
export async function llamaGreedy(model, tokens, nTokens, {threads = 2} = {}) {
  const context = await model.createContext({contextSize: 512, sequences: 1, threads});
  try {
    const sequence = context.getSequence();
    const generated = [];
    for await (const token of sequence.evaluate(tokens, {temperature: 0})) {
      generated.push(token);
      if (generated.length >= nTokens) break;
    }
    return generated;
  } finally {
    await context.dispose();
  }
}

// Indices of the k largest values, largest first.
export function topK(values, k) {
  const idx = Array.from(values.keys());
  idx.sort((a, b) => values[b] - values[a] || a - b);
  return idx.slice(0, k);
}
