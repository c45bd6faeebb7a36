#!/usr/bin/env node
// llama.cpp (node-llama-cpp's prebuilt CPU build) generating N greedy tokens, for
// memory comparisons under a cgroup limit (scripts/in_cgroup.sh). Prints load time and
// generation tok/s (single-token decodes after the prompt, as runnel run reports).
//   node scripts/llama_generate.mjs MODEL [N=16] [CTX=4096] [THREADS=2]
import path from "node:path";
import {fileURLToPath} from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const [model, nText = "16", ctxText = "4096", threadsText = "2"] = process.argv.slice(2);
if (!model) {
  console.error("usage: llama_generate.mjs MODEL [N] [CTX] [THREADS]");
  process.exit(2);
}
const {getLlama, LlamaLogLevel} = await import(path.join(root, "tests/parity/node_modules/node-llama-cpp/dist/index.js"));
const t0 = performance.now();
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: Number(threadsText),
                              logLevel: LlamaLogLevel.error});
const lm = await llama.loadModel({modelPath: model});
const context = await lm.createContext({contextSize: Number(ctxText), threads: Number(threadsText)});
const sequence = context.getSequence();
const loadMs = performance.now() - t0;
const prompt = lm.tokenize("The history of the river begins");
let n = 0, tFirst = 0;
for await (const token of sequence.evaluate(prompt, {temperature: 0})) {
  void token;
  if (++n === 1) tFirst = performance.now();
  if (n >= Number(nText)) break;
}
const genS = (performance.now() - tFirst) / 1000;
console.log(`llama.cpp: load ${loadMs.toFixed(0)} ms, generation ${n} tokens, ${((n - 1) / genS).toFixed(2)} tok/s`);
process.exit(0);
