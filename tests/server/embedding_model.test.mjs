// runnel serve with an embedding model (a tiny random-weight bert written by `runnel
// synth-model`, tokenizer: tests/data/tokenizer/ggml-vocab-bert-bge.gguf), driven by the
// official `openai` client: POST /v1/embeddings gives the model's pooled, L2-normalized
// vectors (the same as `runnel embed`), and chat completions and completions answer an
// OpenAI-style 400 naming the model as an embedding model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

import { binary, startServer, stopServer } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const vocab = path.join(process.env.RUNNEL_TEST_DATA ?? path.join(root, 'tests/data'), 'tokenizer',
                        'ggml-vocab-bert-bge.gguf');
const refusal = 'this is a bert embedding model: it computes embeddings (runnel embed, POST /v1/embeddings), ' +
                'it does not generate text';
const texts = ['The cat sat on the mat.', 'Stock markets fell sharply on Monday.'];

let dir;
let file;
let server;
let client;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'runnel-embed-server-'));
  file = path.join(dir, 'tiny-bert.gguf');
  execFileSync(binary, ['synth-model', '--shape', 'tiny-bert', '--tokenizer-from', vocab, '-o', file],
               { stdio: ['ignore', 'ignore', 'pipe'] });
  server = await startServer(['-t', '2'], { modelPath: file });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  if (server) {
    const { code } = await stopServer(server);
    assert.equal(code, 0, server.stderr());
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

test('POST /v1/embeddings: unit vectors of the model width, as runnel embed gives them', async () => {
  const r = await client.embeddings.create({ model: path.basename(file), input: texts, encoding_format: 'float' });
  assert.equal(r.object, 'list');
  assert.equal(r.data.length, 2);
  const cli = JSON.parse(execFileSync(binary, ['embed', '-m', file, '-t', '2', ...texts.flatMap((t) => ['-p', t])]));
  assert.equal(cli.pooling, 'cls');
  for (const [i, d] of r.data.entries()) {
    assert.equal(d.index, i);
    assert.equal(d.embedding.length, 256);
    assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5, `|embedding ${i}| = ${norm(d.embedding)}`);
    const want = cli.data[i].embedding;
    const maxDiff = Math.max(...d.embedding.map((x, j) => Math.abs(x - want[j])));
    assert.ok(maxDiff < 1e-5, `embedding ${i} differs from runnel embed's by ${maxDiff}`);
  }
  // Different texts, different vectors; the usage counts [CLS] ... [SEP].
  assert.ok(dot(r.data[0].embedding, r.data[1].embedding) < 0.999);
  assert.equal(r.usage.prompt_tokens, cli.data[0].n_tokens + cli.data[1].n_tokens);
  // A single string input, and base64 (the client's default) decoding to the same floats.
  const one = await client.embeddings.create({ input: texts[1] });
  assert.equal(one.data.length, 1);
  const diff = Math.max(...one.data[0].embedding.map((x, j) => Math.abs(x - r.data[1].embedding[j])));
  assert.ok(diff < 1e-6, `base64 embedding differs by ${diff}`);
});

test('chat completions and completions on an embedding model: 400 naming it', async () => {
  const attempts = [
    () => client.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    () => client.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], stream: true }),
    () => client.completions.create({ prompt: 'Once upon a time', max_tokens: 4 }),
  ];
  for (const attempt of attempts) {
    await assert.rejects(attempt(), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.code, 'model_not_supported');
      assert.equal(e.param, 'model');
      assert.equal(e.message, `400 ${refusal}`);
      return true;
    });
  }
  // The server still serves embeddings afterwards.
  const r = await client.embeddings.create({ input: 'still here' });
  assert.equal(r.data[0].embedding.length, 256);
});
