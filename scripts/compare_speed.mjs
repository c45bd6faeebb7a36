#!/usr/bin/env node
// Side-by-side speed of runnel and llama.cpp (node-llama-cpp's prebuilt CPU build) on
// the same model, prompt and thread count. A benchmark, not a test: it prints figures.
//
//   node scripts/compare_speed.mjs [--threads 2] [--n-gen 64] [--runs 3]
//   env: RUNNEL_BIN (default build-release/runnel), RUNNEL_MODEL (default models/SmolLM2...)
//
// runnel's figures are the ones it prints on stderr; llama.cpp's come from its own
// performance counters (llama_perf_context_print), so neither includes model loading
// or, for llama.cpp, the JavaScript around it. Generation rate on both sides: decode
// steps / their time (runnel: the n-1 forward passes between the first and the last
// of n generated tokens, plus sampling; llama.cpp: its "eval" runs).
// Medians of --runs runs; the two peers alternate so machine noise hits both alike.
// On a 2-core machine that is busy with anything else, threads that wait at barriers
// lose whole time slices: compare --threads 1 too before trusting a 2-thread ratio.
// Needs tests/parity/node_modules (scripts/setup.sh --tests installs it).
import {readFileSync} from "node:fs";

import {llamaPromptTokens, loadLlamaModel, missingPrerequisite, modelPath, runRunnel,
        runnelBin} from "../tests/parity/lib/peers.mjs";
import {median, parseCli, positiveInt} from "./lib/cli.mjs";

const usage = "usage: node scripts/compare_speed.mjs [--threads 2] [--n-gen 64] [--runs 3]";
const opts = parseCli("compare_speed", usage, {
  threads: {type: "string", default: "2"},
  "n-gen": {type: "string", default: "64"},
  runs: {type: "string", default: "3"},
});
const threads = positiveInt("compare_speed", usage, "--threads", opts.threads);
const nGen = positiveInt("compare_speed", usage, "--n-gen", opts["n-gen"]);
const runs = positiveInt("compare_speed", usage, "--runs", opts.runs);
if (nGen < 2) throw new Error("--n-gen: need at least 2 tokens for a generation rate");

// A prose prompt of ~150 tokens whose continuation does not end early.
const kPrompt =
    "The history of the printing press begins in the fifteenth century, when Johannes " +
    "Gutenberg, a goldsmith from Mainz, combined movable metal type, oil-based ink and a " +
    "wooden screw press into a system that could produce books far faster than scribes. " +
    "Within fifty years, presses had spread to more than two hundred cities across Europe, " +
    "and millions of volumes were in circulation. The consequences reached into every part " +
    "of life: scholars could compare identical copies of a text, merchants printed price " +
    "lists and contracts, and reformers distributed pamphlets to audiences that had never " +
    "owned a book. Historians still debate which of these changes mattered most, but most " +
    "agree that the press";

const llamaVersion = JSON.parse(readFileSync(
    new URL("../tests/parity/node_modules/node-llama-cpp/package.json", import.meta.url))).version;

async function runnelOnce() {
  const {stderr} = await runRunnel(["run", "-m", modelPath, "-p", kPrompt, "-n", String(nGen),
                                    "--temp", "0", "--no-display-prompt", "-t", String(threads)]);
  // "prompt: N tokens in X ms, R tok/s" / "generation: N tokens in X ms, R tok/s"
  const line = key => {
    const m = stderr.match(new RegExp(`^${key}: (\\d+) tokens in ([\\d.]+) ms`, "m"));
    if (!m) throw new Error(`runnel printed no '${key}:' timing line; stderr:\n${stderr}`);
    return {n: Number(m[1]), ms: Number(m[2])};
  };
  const p = line("prompt"), g = line("generation");
  return {nPrompt: p.n, nGen: g.n, promptRate: p.n / p.ms * 1000, genRate: (g.n - 1) / g.ms * 1000};
}

// llama.cpp's log lines of the current run (see loadLlamaModel's onLog).
let llamaLog = "";

async function llamaOnce(model, promptTokens, n = nGen) {
  llamaLog = "";
  const context = await model.createContext({contextSize: 1024, sequences: 1, threads,
                                             performanceTracking: true});
  try {
    const sequence = context.getSequence();
    let generated = 0;
    for await (const token of sequence.evaluate(promptTokens, {temperature: 0})) {
      void token;
      if (++generated >= n) break;
    }
    await context.printTimings();
  } finally {
    await context.dispose();
  }
  // "prompt eval time = 951.78 ms / 73 tokens (...)", "eval time = 2967.36 ms / 63 runs"
  const line = key => {
    const m = llamaLog.match(new RegExp(`${key} time =\\s*([\\d.]+) ms /\\s*(\\d+) (tokens|runs)`));
    if (!m) throw new Error(`llama.cpp printed no '${key} time' line; log:\n${llamaLog}`);
    return {ms: Number(m[1]), n: Number(m[2])};
  };
  const p = line("prompt eval"), g = line("(?<!prompt )eval");
  return {nPrompt: p.n, nGen: g.n + 1, promptRate: p.n / p.ms * 1000, genRate: g.n / g.ms * 1000};
}

const missing = missingPrerequisite();
if (missing) {
  console.error(`compare_speed: ${missing}`);
  process.exit(1);
}
const model = await loadLlamaModel({threads, onLog: (level, text) => { llamaLog += text; }});
const promptTokens = llamaPromptTokens(model, kPrompt);
await llamaOnce(model, promptTokens.slice(0, 16), 2);  // warm-up: page in the weights
await runnelOnce();

const results = {runnel: [], llama: []};
for (let i = 0; i < runs; ++i) {
  results.runnel.push(await runnelOnce());
  results.llama.push(await llamaOnce(model, promptTokens));
}

const summary = name => ({
  nPrompt: results[name][0].nPrompt,
  nGen: median(results[name].map(r => r.nGen)),
  promptRate: median(results[name].map(r => r.promptRate)),
  genRate: median(results[name].map(r => r.genRate)),
});
const r = summary("runnel"), l = summary("llama");
const fmt = x => x.toFixed(1).padStart(9);
console.log(`model ${modelPath}`);
console.log(`runnel ${runnelBin}; llama.cpp via node-llama-cpp ${llamaVersion}; ${threads} ` +
            `thread(s); median of ${runs} runs`);
console.log(`peer        prompt tok/s   gen tok/s   (prompt tokens, generated tokens)`);
console.log(`runnel      ${fmt(r.promptRate)}   ${fmt(r.genRate)}   (${r.nPrompt}, ${r.nGen})`);
console.log(`llama.cpp   ${fmt(l.promptRate)}   ${fmt(l.genRate)}   (${l.nPrompt}, ${l.nGen})`);
console.log(`ratio runnel/llama.cpp: prompt ${(r.promptRate / l.promptRate).toFixed(2)}x, ` +
            `generation ${(r.genRate / l.genRate).toFixed(2)}x`);
process.exit(0);
