// The paired comparison behind scripts/kld_table.sh --paired: whether a set of logits
// agrees with a base's top token less often than llama.cpp's other attention path does,
// position by position rather than as two separate rates. Every input is a KL-divergence
// base file (llama-perplexity's --kl-divergence-base format, core/runtime/perplexity.h)
// of the same text and windows; a position's top token is the first largest level of its
// row, for every file alike.
//   node scripts/lib/kld_paired.mjs --base FLASH.kld --own NONFLASH.kld NAME=FILE.kld ...
// For each NAME: both rates of agreeing with the base's top, the positions where only one
// of the two agrees (n_own: llama.cpp's other path only, n_row: NAME only), the
// difference of the rates with its paired standard error
//   d = (n_row - n_own) / N,  se = sqrt(n_row + n_own - (n_row - n_own)^2 / N) / N,
// and the verdict "no worse" unless d < -1.645 se (worse at the one-sided 5% level).
import { openBase } from './kld_base.mjs';

function usage() {
  console.error('usage: node scripts/lib/kld_paired.mjs --base FLASH.kld --own NONFLASH.kld NAME=FILE.kld ...');
  process.exit(2);
}

// The top token of every scored position of a base file, with the file's header (its
// sizes and tokens).
function readTops(file) {
  const base = openBase(file);
  const tops = new Int32Array(base.nChunk * base.nScored);
  for (let c = 0; c < base.nChunk; ++c) {
    for (let j = 0; j < base.nScored; ++j) {
      const { levels } = base.row(c, j);
      let best = 0;
      for (let i = 1; i < levels.length; ++i) if (levels[i] > levels[best]) best = i;
      tops[c * base.nScored + j] = best;
    }
  }
  return { header: base.header, tops };
}

const args = process.argv.slice(2);
let basePath = '', ownPath = '';
const rows = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--base') basePath = args[++i] ?? '';
  else if (args[i] === '--own') ownPath = args[++i] ?? '';
  else if (args[i].includes('=')) rows.push(args[i].split(/=(.*)/s).slice(0, 2));
  else usage();
}
if (!basePath || !ownPath || rows.length === 0) usage();

const base = readTops(basePath);
const own = readTops(ownPath);
const same = (a, b) => a.header.equals(b.header);  // sizes and tokens
if (!same(base, own)) throw new Error(`${ownPath}: not the text, windows and vocabulary of ${basePath}`);
const n = base.tops.length;

console.log(`| logits | same top as the base | llama.cpp's other path | only llama.cpp's | only this | difference ± paired SE (points) | z | no worse (one-sided 5%) |`);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const [name, path] of rows) {
  const row = readTops(path);
  if (!same(base, row)) throw new Error(`${path}: not the text, windows and vocabulary of ${basePath}`);
  let nRow = 0, nOwn = 0, onlyOwn = 0, onlyRow = 0;
  for (let i = 0; i < n; ++i) {
    const r = row.tops[i] === base.tops[i], o = own.tops[i] === base.tops[i];
    nRow += r;
    nOwn += o;
    if (o && !r) ++onlyOwn;
    if (r && !o) ++onlyRow;
  }
  const d = (onlyRow - onlyOwn) / n;
  const se = Math.sqrt(Math.max(0, onlyRow + onlyOwn - (onlyRow - onlyOwn) ** 2 / n)) / n;
  const z = se > 0 ? d / se : 0;
  const pct = (x) => (100 * x).toFixed(2);
  console.log(`| ${name} | ${pct(nRow / n)} % | ${pct(nOwn / n)} % | ${onlyOwn} | ${onlyRow} | ` +
              `${pct(d)} ± ${pct(se)} | ${z.toFixed(2)} | ${z < -1.645 ? 'NO' : 'yes'} |`);
}
console.log(`(${n} scored positions)`);
