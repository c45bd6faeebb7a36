// The wasm build's row of scripts/kld_table.sh: runnel-llm (wasm/js, in Node) evaluates
// each window of a KL-divergence base file (llama-perplexity's --kl-divergence-base
// format, core/runtime/perplexity.h) from an empty cache with BOS first, as
// `runnel perplexity --kl-divergence` does, and prints the mean KL(base || wasm) and the
// share of scored positions whose top token is the base's, in the lines the native
// tools print:
//   node scripts/lib/kld_wasm.mjs --model M.gguf --base BASE [--isa simd128|simd128-relaxed|ref] [--chunks N]
//        [--save-base OUT]
// --save-base also writes the wasm logits as a base file of the same windows (quantized
// as `runnel perplexity --kl-divergence-base` does: core/runtime/perplexity.cpp), for
// scripts/lib/kld_paired.mjs. Node needs --experimental-wasm-relaxed-simd for the relaxed
// kernels.
import fs from 'node:fs';
import { parseArgs } from 'node:util';

import { loadModel } from '../../wasm/js/index.js';
import { openBase } from './kld_base.mjs';

const kLogProbFloor = -16;  // base log-probs at or below it are left out, as natively

const { values: opt } = parseArgs({
  options: { model: { type: 'string' }, base: { type: 'string' }, isa: { type: 'string', default: '' },
             chunks: { type: 'string', default: '-1' }, 'save-base': { type: 'string' } },
});
if (!opt.model || !opt.base) {
  console.error('usage: node scripts/lib/kld_wasm.mjs --model M.gguf --base BASE [--isa ISA] [--chunks N]');
  process.exit(2);
}

// One base row of logits: log-softmax levels over [max(min, max - 16), max] in 65535 steps
// (float arithmetic as core/runtime/perplexity.cpp quantize_log_probs does it).
function quantizeRow(logits, nVocab) {
  const f = Math.fround;
  const out = Buffer.alloc(2 * (2 * Math.ceil(nVocab / 2) + 4));
  let maxLogit = logits[0], minLogit = logits[0];
  for (let i = 1; i < nVocab; ++i) {
    if (logits[i] > maxLogit) maxLogit = logits[i];
    if (logits[i] < minLogit) minLogit = logits[i];
  }
  minLogit = Math.max(minLogit, f(maxLogit - 16));
  let sum = 0;
  for (let i = 0; i < nVocab; ++i) sum += Math.exp(logits[i] - maxLogit);
  const logSumExp = f(Math.log(sum));
  const scale = f(f(maxLogit - minLogit) / 65535);
  out.writeFloatLE(scale, 0);
  out.writeFloatLE(f(f(minLogit - maxLogit) - logSumExp), 4);
  if (scale !== 0) {
    const invScale = f(1 / scale);
    for (let i = 0; i < nVocab; ++i) {
      // nearest, ties to even, as the float add of 1.5 * 2^23 rounds
      if (logits[i] > minLogit) out.writeUInt16LE((f(f(invScale * f(logits[i] - minLogit)) + 12582912) - 12582912) & 0xffff, 8 + 2 * i);
    }
  }
  return out;
}

const base = openBase(opt.base);
const nChunks = Number(opt.chunks) < 0 ? base.nChunk : Math.min(Number(opt.chunks), base.nChunk);
const model = await loadModel({ path: opt.model },
                              { contextSize: base.nCtx, batchSize: base.nCtx, allLogits: true, isa: opt.isa });
if (model.info.nVocab !== base.nVocab) throw new Error(`model has ${model.info.nVocab} tokens, the base ${base.nVocab}`);
// Each window starts with BOS where the tokenizer adds one (llama-perplexity's rule).
const bos = (await model.tokenize('a'))[0] === model.info.bos ? model.info.bos : -1;

let sumKld = 0, sumKld2 = 0, nSame = 0, count = 0;
const started = performance.now();
const saved = opt['save-base'] ? fs.openSync(opt['save-base'], 'w') : null;
if (saved !== null) {
  const header = Buffer.from(base.header);
  header.writeInt32LE(nChunks, 16);
  fs.writeSync(saved, header.subarray(0, 20 + 4 * nChunks * base.nCtx));
}
for (let c = 0; c < nChunks; ++c) {
  const window = Array.from(base.tokens.subarray(c * base.nCtx, (c + 1) * base.nCtx));
  if (bos >= 0) window[0] = bos;
  const session = model.createSession();
  const rows = await session.evalLogits(window);
  session.dispose?.();
  for (let j = 0; j < base.nScored; ++j) {
    const logits = rows[Math.floor(base.nCtx / 2) + j];
    if (saved !== null) fs.writeSync(saved, quantizeRow(logits, base.nVocab));
    let max = -Infinity, imax = 0;
    for (let i = 0; i < logits.length; ++i) if (logits[i] > max) { max = logits[i]; imax = i; }
    let sum = 0;
    for (let i = 0; i < logits.length; ++i) sum += Math.exp(logits[i] - max);
    const logNorm = max + Math.log(sum);
    const { scale, min, levels } = base.row(c, j);
    let kld = 0, baseMax = -Infinity, baseTop = 0;
    for (let i = 0; i < levels.length; ++i) {
      const lp = Math.fround(scale * levels[i] + min);
      if (lp > baseMax) { baseMax = lp; baseTop = i; }
      if (lp > kLogProbFloor) kld += Math.exp(lp) * (lp - logits[i] + logNorm);
    }
    sumKld += kld;
    sumKld2 += kld * kld;
    nSame += imax === baseTop ? 1 : 0;
    ++count;
  }
  process.stderr.write(`[${c + 1}/${nChunks}] mean KLD so far ${(sumKld / count).toFixed(6)}\n`);
}
await model.dispose?.();
if (saved !== null) fs.closeSync(saved);
const mean = sumKld / count;
const err = count > 10 ? Math.sqrt(Math.max(0, sumKld2 / count - mean * mean) / (count - 1)) : 0;
const same = nSame / count;
console.log(`kernels: wasm ${opt.isa || 'default'}; ${count} positions in ${nChunks} windows; ` +
            `${((performance.now() - started) / 1000).toFixed(1)} s`);
console.log(`Mean    KLD: ${mean.toFixed(6)} ± ${err.toFixed(6)}`);
console.log(`Same top p: ${(100 * same).toFixed(3)} ± ${(100 * Math.sqrt(same * (1 - same) / (count - 1))).toFixed(3)} %`);
