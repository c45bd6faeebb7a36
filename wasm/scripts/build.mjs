// `npm run build`: builds the wasm module twice from the repository root with
// Emscripten (single-threaded runnel.mjs in build-wasm-module, pthreads runnel-mt.mjs in
// build-wasm-module-mt) and copies the outputs into wasm/dist/.
//   node scripts/build.mjs [--st-only]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const dist = path.resolve(here, '..', 'dist');
const jobs = process.env.RUNNEL_JOBS ?? '2';
const env = { ...process.env, NODE_PATH: process.env.NODE_PATH ?? '/usr/share/nodejs' };

function run(cmd, args) {
  console.log(`+ ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { cwd: root, stdio: 'inherit', env });
}

const variants = [{ dir: 'build-wasm-module', threads: 'OFF', files: ['runnel.mjs', 'runnel.wasm'] }];
if (!process.argv.includes('--st-only')) {
  variants.push({
    dir: 'build-wasm-module-mt',
    threads: 'ON',
    files: ['runnel-mt.mjs', 'runnel-mt.wasm', 'runnel-mt.worker.js'],
  });
}
fs.mkdirSync(dist, { recursive: true });
for (const v of variants) {
  run('emcmake', ['cmake', '-S', '.', '-B', v.dir, '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
    '-DRUNNEL_TESTS=OFF', `-DRUNNEL_WASM_THREADS=${v.threads}`]);
  run('ninja', ['-C', v.dir, `-j${jobs}`, 'runnel_wasm']);
  for (const f of v.files) {
    const from = path.join(root, v.dir, 'wasm', f);
    if (!fs.existsSync(from)) throw new Error(`build: ${from} was not produced`);
    fs.copyFileSync(from, path.join(dist, f));
  }
}
console.log(`build: ${fs.readdirSync(dist).join(', ')} in ${dist}`);

// The demo page (web/) loads the package from web/runnel-llm/, so that web/ alone is
// a complete static site (runnel serve, or any static server).
const webCopy = path.join(root, 'web', 'runnel-llm');
fs.rmSync(webCopy, { recursive: true, force: true });
fs.cpSync(path.resolve(here, '..', 'js'), path.join(webCopy, 'js'), { recursive: true });
fs.cpSync(dist, path.join(webCopy, 'dist'), { recursive: true });
console.log(`build: copied the package into ${webCopy}`);
