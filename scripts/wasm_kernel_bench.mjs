#!/usr/bin/env node
// Speed of the relaxed-SIMD x8 products (kernels/wasm/relaxed/relaxed_kernels.cpp) on their
// own, in Node: G weights/s with the weights in cache (128 rows, reused) and streamed
// from memory (131072 rows of n = 2048, one pass), on 1 worker and on 2 at once, beside
// a plain SIMD128 read of the same bytes in the same workers (the peer figure).
// It shows whether a kernel is bound by its instructions (stream close to cache) or by
// memory (stream GB/s close to the plain read), which is what decides the wasm decode
// speed of a model; the weights are random bytes, as speed does not depend on them.
//
//   node scripts/wasm_kernel_bench.mjs [--kinds q4_0,q4_1,q4_k,q6_k] [--module FILE]
// Default module: build-wasm-module/relaxed/relaxed_kernels.wasm (npm run build in wasm/).
// Node 20 needs --experimental-wasm-relaxed-simd; the script re-runs itself with it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

import { median, parseCli } from './lib/cli.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const n = 2048;                               // weights per row
const streamRows = 131072, cacheRows = 128;   // 8-row groups: 16384 and 16
// Group block sizes and their leading float fields (kernels/wasm/relaxed/relaxed_layout.h),
// and the activation block (ActQ8_0 / ActQ8_1 / ActQ8K).
const kinds = {
  q4_0: { weights: 32, block: 160, floats: 8, act: 34, actF16: [0] },
  q4_1: { weights: 32, block: 192, floats: 16, act: 36, actF16: [0, 2] },
  q4_k: { weights: 256, block: 1200, floats: 16, act: 292, actF32: true },
  q6_k: { weights: 256, block: 1696, floats: 8, act: 292, actF32: true },
};

// The peer: a plain SIMD128 read of the same bytes, `read(ptr, end)` summing 16-byte
// loads 64 bytes per step in 4 accumulators (hand-assembled: the smallest wasm that
// streams memory as fast as the engine can).
const kReadModule = (() => {
  const section = (id, bytes) => [id, bytes.length, ...bytes]; // every size here is < 128
  const add = [0xfd, 0xae, 0x01]; // i32x4.add
  const body = [
    0x01, 0x04, 0x7b, // locals 2..5: v128
    0x03, 0x40, // loop
    ...[0, 16, 32, 48].flatMap((offset, i) =>
      [0x20, 2 + i, 0x20, 0x00, 0xfd, 0x00, 0x04, offset, ...add, 0x21, 2 + i]), // acc_i += load(ptr + offset)
    0x20, 0x00, 0x41, 0xc0, 0x00, 0x6a, 0x22, 0x00, 0x20, 0x01, 0x49, 0x0d, 0x00, // ptr += 64; again while ptr < end
    0x0b,
    0x20, 0x02, 0x20, 0x03, ...add, 0x20, 0x04, ...add, 0x20, 0x05, ...add, 0xfd, 0x1b, 0x00, // lane 0 of the sum
    0x0b,
  ];
  const text = (t) => [t.length, ...Buffer.from(t)];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]), // (i32, i32) -> i32
    ...section(2, [0x01, ...text('env'), ...text('memory'), 0x02, 0x00, 0x01]),
    ...section(3, [0x01, 0x00]),
    ...section(7, [0x01, ...text('read'), 0x00, 0x00]),
    ...section(10, [0x01, body.length, ...body]),
  ]);
})();

// One worker: its own memory and instances. Returns { cache, stream } in G weights/s,
// readGBs (the plain read of the streamed bytes) and bytesPerWeight. `start` (a
// SharedArrayBuffer of one counter per timed pass) lines the workers up before each pass.
function measure({ file, kind, start, nWorkers }) {
  const k = kinds[kind];
  const nb = n / k.weights;
  const groupBytes = nb * k.block;
  const kAct = 0, kSums = 16384, kScratch = 24576, kOut = 32768, kWeights = 1 << 20;
  const bytes = (streamRows / 8) * groupBytes; // the streamed weights
  const memory = new WebAssembly.Memory({ initial: Math.ceil((kWeights + bytes) / 65536) + 1 });
  const u8 = new Uint8Array(memory.buffer);
  const view = new DataView(memory.buffer);
  let seed = 12345;
  const byte = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16) & 255;
  for (let i = 0; i < bytes; ++i) u8[kWeights + i] = byte();
  for (let b = 0; b < bytes / k.block; ++b) {
    for (let f = 0; f < k.floats; ++f) view.setFloat32(kWeights + b * k.block + 4 * f, 1e-3, true);
  }
  for (let i = 0; i < nb * k.act; ++i) u8[kAct + i] = byte();
  for (let b = 0; b < nb; ++b) {
    if (k.actF32) view.setFloat32(kAct + b * k.act, 1e-2, true);
    for (const off of k.actF16 ?? []) view.setUint16(kAct + b * k.act + off, 0x2000, true);
  }
  const exports = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(file)), { env: { memory } }).exports;
  const gemm = exports[`gemm_x8_${kind}`];
  const pass = (rows, reps) => {
    const t0 = performance.now();
    for (let r = 0; r < reps; ++r) {
      for (let g = 0; g < rows / 8; ++g) gemm(nb, kWeights + g * groupBytes, kAct, 0, kSums, 1, kOut, 0, kScratch);
    }
    return (rows * n * reps) / ((performance.now() - t0) * 1e6);
  };
  const read = new WebAssembly.Instance(new WebAssembly.Module(kReadModule), { env: { memory } }).exports.read;
  pass(cacheRows, 50); // tier up
  read(kWeights, kWeights + (1 << 20));
  // Every timed pass starts when all workers reach it, so they run it at the same time.
  const flags = new Int32Array(start);
  let phase = 0;
  const together = () => {
    Atomics.add(flags, phase, 1);
    while (Atomics.load(flags, phase) < nWorkers) { /* spin */ }
    ++phase;
  };
  const cache = median([0, 1, 2, 3, 4].map(() => (together(), pass(cacheRows, 400))));
  const stream = median([0, 1, 2].map(() => (together(), pass(streamRows, 1))));
  const readGBs = median([0, 1, 2].map(() => {
    together();
    const t0 = performance.now();
    read(kWeights, kWeights + bytes);
    return bytes / ((performance.now() - t0) * 1e6);
  }));
  return { cache, stream, readGBs, bytesPerWeight: k.block / (8 * k.weights) };
}

if (!isMainThread) {
  parentPort.postMessage(measure(workerData));
} else {
  if (!process.execArgv.includes('--experimental-wasm-relaxed-simd') && Number(process.versions.node.split('.')[0]) < 22) {
    const r = spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', ...process.argv.slice(1)], { stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
  const usage = 'usage: node scripts/wasm_kernel_bench.mjs [--kinds q4_0,q4_1,q4_k,q6_k] [--module FILE]';
  const opts = parseCli('wasm_kernel_bench', usage, {
    kinds: { type: 'string', default: 'q4_0,q4_1,q4_k,q6_k' },
    module: { type: 'string', default: path.join(root, 'build-wasm-module/relaxed/relaxed_kernels.wasm') },
  });
  const list = opts.kinds.split(',');
  for (const kind of list) {
    if (!kinds[kind]) {
      console.error(`wasm_kernel_bench: unknown kind ${JSON.stringify(kind)} (${Object.keys(kinds).join(', ')})\n${usage}`);
      process.exit(2);
    }
  }
  if (!fs.existsSync(opts.module)) {
    console.error(`wasm_kernel_bench: no module at ${opts.module} (npm run build in wasm/ builds it)`);
    process.exit(1);
  }
  const run = (kind, nWorkers) => {
    const start = new SharedArrayBuffer(4 * 16); // 11 timed passes: 5 cache, 3 stream, 3 read
    return Promise.all([...Array(nWorkers)].map(() => new Promise((resolve, reject) => {
      // V8 flags are per process: the workers have relaxed SIMD when this one has.
      const w = new Worker(new URL(import.meta.url), { workerData: { file: opts.module, kind, start, nWorkers } });
      w.once('message', resolve);
      w.once('error', reject);
    })));
  };
  console.log(`relaxed-SIMD x8 products, n = ${n}, one activation row (decode), G weights/s; ` +
    'peer: a plain SIMD128 read of the same bytes in the same workers\n');
  console.log('| kind | workers | in cache | streamed | streamed GB/s | plain read GB/s | share |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const kind of list) {
    for (const nWorkers of [1, 2]) {
      const res = await run(kind, nWorkers);
      const sum = (f) => res.reduce((total, r) => total + f(r), 0);
      const gbs = sum((r) => r.stream) * res[0].bytesPerWeight;
      const read = sum((r) => r.readGBs);
      console.log(`| ${kind} | ${nWorkers} | ${sum((r) => r.cache).toFixed(1)} | ${sum((r) => r.stream).toFixed(1)} | ` +
        `${gbs.toFixed(1)} | ${read.toFixed(1)} | ${((100 * gbs) / read).toFixed(0)}% |`);
    }
  }
}
