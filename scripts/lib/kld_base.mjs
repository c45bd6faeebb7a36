// Reading a KL-divergence base file (llama-perplexity's --kl-divergence-base format,
// core/runtime/perplexity.h): "_logits_", n_ctx, n_vocab, n_chunk (int32), the windows'
// tokens (int32), then for each window's scored positions (the second half, less the
// last) a row of scale, min (float) and n_vocab uint16 log-probability levels, padded
// to an even count. Shared by kld_wasm.mjs and kld_paired.mjs.
import fs from 'node:fs';

// The header of a base file and a reader of its rows; a row's levels are a view of the
// file's bytes (rows start at even offsets).
export function openBase(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.subarray(0, 8).toString('latin1') !== '_logits_') throw new Error(`${file}: not a KL-divergence base`);
  const nCtx = bytes.readInt32LE(8), nVocab = bytes.readInt32LE(12), nChunk = bytes.readInt32LE(16);
  const tokens = new Int32Array(bytes.buffer.slice(bytes.byteOffset + 20, bytes.byteOffset + 20 + 4 * nChunk * nCtx));
  const rowU16 = 2 * Math.ceil(nVocab / 2) + 4;
  const rowsStart = 20 + 4 * nChunk * nCtx;
  const nScored = nCtx - 1 - Math.floor(nCtx / 2);
  if (bytes.length !== rowsStart + nChunk * nScored * rowU16 * 2) {
    throw new Error(`${file}: ${bytes.length} bytes, expected ${rowsStart + nChunk * nScored * rowU16 * 2}`);
  }
  const row = (chunk, j) => {
    const off = rowsStart + (chunk * nScored + j) * rowU16 * 2;
    return { scale: bytes.readFloatLE(off), min: bytes.readFloatLE(off + 4),
             levels: new Uint16Array(bytes.buffer, bytes.byteOffset + off + 8, nVocab) };
  };
  return { nCtx, nVocab, nChunk, tokens, nScored, row, header: bytes.subarray(0, rowsStart) };
}
