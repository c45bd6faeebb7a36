#!/usr/bin/env node
// runnel vs llama.cpp, side by side, measured the way llama-bench measures:
//   pp N: one batch of N tokens evaluated on an empty context
//   tg N: N single-token decodes without sampling
// runnel's figures come from `runnel bench -o jsonl`; llama.cpp's from its own
// llama-bench (`--peer llama-bench`, the default once scripts/build_llama_cpp.sh has built
// it into build-llama.cpp/build/bin; its defaults, one process per run) or from
// node-llama-cpp's prebuilt CPU build (`--peer node`, timing only the evaluation calls;
// its JS loop under-reports 2-thread decode); same GGUF, same threads, same lengths. Runs interleave (runnel, llama.cpp, runnel, ...) so machine noise
// hits both; medians are reported. Also prints the machine's read bandwidth (`runnel
// bench --mem-bandwidth`) and the decode roofline ratio: bytes of weights read per
// token x tok/s / bandwidth.
//
//   node scripts/side_by_side.mjs [--models a.gguf,b.gguf] [--threads 1,2] [--runs 3]
//                                 [-p 128] [-n 32] [--peer llama-bench|node]
// Default models: SmolLM2 and models/bench/*.gguf that exist (scripts/gen_bench_models.sh).
// Needs build-release/runnel, and tests/parity/node_modules (scripts/setup.sh --tests) for
// the node peer.
import {execFile} from "node:child_process";
import {existsSync, readdirSync, statSync} from "node:fs";
import path from "node:path";
import {promisify} from "node:util";
import {fileURLToPath} from "node:url";

import {median, parseCli, positiveInt, positiveIntList} from "./lib/cli.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);
const usage = "usage: node scripts/side_by_side.mjs [--models a.gguf,b.gguf] [--threads 1,2] [--runs 3] [-p 128] [-n 32] " +
              "[--peer llama-bench|node]";
const opts = parseCli("side_by_side", usage, {
  models: {type: "string"},
  threads: {type: "string", default: "1,2"},
  runs: {type: "string", default: "3"},
  p: {type: "string", short: "p", default: "128"},
  n: {type: "string", short: "n", default: "32"},
  peer: {type: "string"},
});
const llamaBenchBin = process.env.LLAMA_BENCH ?? path.join(root, "build-llama.cpp/build/bin/llama-bench");
const peer = opts.peer ?? (existsSync(llamaBenchBin) ? "llama-bench" : "node");
if (peer !== "llama-bench" && peer !== "node") {
  console.error(`side_by_side: --peer is llama-bench or node, not '${peer}'\n${usage}`);
  process.exit(2);
}
if (peer === "llama-bench" && !existsSync(llamaBenchBin)) {
  console.error(`side_by_side: no llama-bench at ${llamaBenchBin} (scripts/build_llama_cpp.sh builds it)`);
  process.exit(1);
}
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, "build-release/runnel");
const threadsList = positiveIntList("side_by_side", usage, "--threads", opts.threads);
const runs = positiveInt("side_by_side", usage, "--runs", opts.runs);
const nPrompt = positiveInt("side_by_side", usage, "-p", opts.p);
const nGen = positiveInt("side_by_side", usage, "-n", opts.n);
let models = opts.models?.split(",");
if (!models) {
  models = [path.join(root, "models/SmolLM2-135M-Instruct.Q4_1.gguf")];
  const bench = path.join(root, "models/bench");
  if (existsSync(bench)) {
    models.push(...readdirSync(bench).filter((f) => f.endsWith(".gguf")).sort().map((f) => path.join(bench, f)));
  }
}
for (const m of models) if (!existsSync(m)) throw new Error(`no model at ${m}`);
if (!existsSync(runnelBin)) throw new Error(`no runnel binary at ${runnelBin}`);

const {getLlama, LlamaLogLevel} = peer === "node"
    ? await import(path.join(root, "tests/parity/node_modules/node-llama-cpp/dist/index.js")) : {};

async function runnelBench(model, threads, test) {
  const args = ["bench", "-m", model, "-t", String(threads), "-r", "1", "-o", "jsonl",
                "-p", test === "pp" ? String(nPrompt) : "0", "-n", test === "tg" ? String(nGen) : "0"];
  const {stdout} = await run(runnelBin, args, {maxBuffer: 1 << 24});
  const line = stdout.trim().split("\n").map((l) => JSON.parse(l))[0];
  return line.avg_ts;
}

function randomTokens(n, nVocab, seed) {
  let s = seed * 2654435761 >>> 0;
  const out = [];
  for (let i = 0; i < n; ++i) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out.push(s % nVocab);
  }
  return out;
}

async function llamaBench(context, nVocab, test, seed) {
  const sequence = context.getSequence();
  try {
    const t0 = performance.now();
    if (test === "pp") {
      await sequence.evaluateWithoutGeneratingNewTokens(randomTokens(nPrompt, nVocab, seed));
      return nPrompt / ((performance.now() - t0) / 1000);
    }
    for (const token of randomTokens(nGen, nVocab, seed)) {
      await sequence.evaluateWithoutGeneratingNewTokens([token]);
    }
    return nGen / ((performance.now() - t0) / 1000);
  } finally {
    sequence.dispose();
  }
}

// llama.cpp's own figure for one test: llama-bench with its defaults (a warm-up run, then
// -r 1), its average tokens per second.
async function llamaBenchTool(model, threads, test) {
  const args = ["-m", model, "-t", String(threads), "-r", "1", "-o", "jsonl",
                "-p", test === "pp" ? String(nPrompt) : "0", "-n", test === "tg" ? String(nGen) : "0"];
  const {stdout} = await run(llamaBenchBin, args, {maxBuffer: 1 << 24});
  const line = stdout.trim().split("\n").map((l) => JSON.parse(l))[0];
  return line.avg_ts;
}

// The llama.cpp side for one model and thread count: bench(test, seed) -> tok/s.
async function openPeer(model, threads) {
  if (peer === "llama-bench") {
    return {bench: (test) => llamaBenchTool(model, threads, test), close: async () => {}};
  }
  const llama = await getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: threads,
                                logLevel: LlamaLogLevel.error});
  const lm = await llama.loadModel({modelPath: model});
  const nVocab = lm.tokens.vocabSize ?? lm.fileInsights?.tokens?.vocabSize ?? 32000;
  const context = await lm.createContext({contextSize: Math.max(nPrompt, nGen) + 64, batchSize: nPrompt,
                                          sequences: 1, threads, flashAttention: false});
  return {
    bench: (test, seed) => llamaBench(context, nVocab, test, seed),
    close: async () => {
      await context.dispose();
      await lm.dispose();
      await llama.dispose();
    },
  };
}

async function bandwidth() {
  const {stdout} = await run(runnelBin, ["bench", "--mem-bandwidth", "-t", threadsList.join(","), "-o", "jsonl"]);
  const out = {};
  for (const line of stdout.trim().split("\n")) {
    const j = JSON.parse(line);
    out[j.n_threads] = j.gb_per_s;
  }
  return out;
}

const bw = await bandwidth();
const rows = [];
for (const model of models) {
  const bytes = statSync(model).size;  // every weight is read once per decoded token
  for (const threads of threadsList) {
    const peerSide = await openPeer(model, threads);
    for (const test of ["pp", "tg"]) {
      await runnelBench(model, threads, test);  // warm-ups: page the weights in
      await peerSide.bench(test, 99);
      const r = [], l = [];
      for (let i = 0; i < runs; ++i) {
        r.push(await runnelBench(model, threads, test));
        l.push(await peerSide.bench(test, i + 1));
      }
      const row = {model: path.basename(model), threads, test: test === "pp" ? `pp${nPrompt}` : `tg${nGen}`,
                   runnel: median(r), llama: median(l)};
      if (test === "tg") {
        row.roofline = (bytes * row.runnel / 1e9) / bw[threads];
        row.llamaRoofline = (bytes * row.llama / 1e9) / bw[threads];
      }
      rows.push(row);
      console.error(`${row.model} t=${threads} ${row.test}: runnel ${row.runnel.toFixed(2)}, ` +
                    `llama.cpp ${row.llama.toFixed(2)} tok/s`);
    }
    await peerSide.close();
  }
}

console.log(`read bandwidth (runnel bench --mem-bandwidth): ` +
            Object.entries(bw).map(([t, g]) => `${g.toFixed(1)} GB/s at ${t} thread(s)`).join(", "));
console.log(`median of ${runs} interleaved runs; llama.cpp = ` +
            (peer === "llama-bench" ? `llama-bench (${llamaBenchBin})\n` : "node-llama-cpp's prebuilt CPU build\n"));
console.log("| model | threads | test | runnel t/s | llama.cpp t/s | ratio | decode roofline runnel / llama.cpp |");
console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  const roof = r.roofline !== undefined ? `${(100 * r.roofline).toFixed(0)}% / ${(100 * r.llamaRoofline).toFixed(0)}%` : "";
  console.log(`| ${r.model} | ${r.threads} | ${r.test} | ${r.runnel.toFixed(2)} | ${r.llama.toFixed(2)} | ` +
              `${(r.runnel / r.llama).toFixed(2)}x | ${roof} |`);
}
process.exit(0);
