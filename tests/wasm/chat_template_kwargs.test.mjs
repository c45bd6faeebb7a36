// runnel-llm's chatTemplateKwargs against the native CLI's --chat-template-kwargs (the
// server's chat_template_kwargs): a tiny random-weight Qwen3 model (`runnel synth-model
// --shape tiny-qwen3`, llama.cpp's GPT-2 test vocabulary, no template of its own, so
// both sides use runnel's built-in Qwen3 template, which reads enable_thinking). With
// the scalar kernels on both sides the logits are the same bits, so the greedy replies
// must be the same text, with and without the option, and the option must change the
// prompt as it changes native's.
//   RUNNEL_BIN (default build-release/runnel).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, 'build-release/runnel');
const vocab = path.join(root, 'tests/data/tokenizer/ggml-vocab-gpt-2.gguf');
const skip = (!fs.existsSync(runnelBin) && `no runnel binary at ${runnelBin} (set RUNNEL_BIN)`) ||
  (!fs.existsSync(vocab) && `no ${vocab}`);
const kQuestion = 'Why is the sky blue?';
const kTokens = 16;

function runNative(args) {
  return new Promise((resolve, reject) => {
    execFile(runnelBin, args, { encoding: 'utf8', env: { ...process.env, RUNNEL_ISA: 'ref' } },
      (error, stdout, stderr) => (error ? reject(new Error(`runnel ${args.join(' ')}: ${stderr}`)) : resolve({ stdout, stderr })));
  });
}

async function collect(iterable) {
  let text = '';
  for await (const piece of iterable) text += piece;
  return text;
}

describe('runnel-llm chatTemplateKwargs', { skip }, () => {
  let dir, file, model;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runnel-wasm-kwargs-'));
    file = path.join(dir, 'tiny-qwen3.gguf');
    await runNative(['synth-model', '--shape', 'tiny-qwen3', '--tokenizer-from', vocab, '-o', file]);
    model = await loadModel({ path: file }, { contextSize: 256, isa: 'ref' });
  });
  after(async () => {
    await model?.dispose();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Native `runnel run --chat`: the reply and the prompt's token count (from its figures).
  async function nativeChat(kwargs) {
    const { stdout, stderr } = await runNative(['run', '-m', file, '--chat', '-p', kQuestion, '-n', String(kTokens),
      '--temp', '0', '-t', '1', '-c', '256', ...(kwargs ? ['--chat-template-kwargs', JSON.stringify(kwargs)] : [])]);
    const promptTokens = Number(/prompt: (\d+) tokens/.exec(stderr)?.[1]);
    assert.ok(stdout.endsWith('\n') && Number.isInteger(promptTokens), stderr);
    return { reply: stdout.slice(0, -1), promptTokens };
  }

  test('enable_thinking reaches the template: the same prompt and reply as native, with and without', async () => {
    const messages = [{ role: 'user', content: kQuestion }];
    const results = [];
    for (const kwargs of [undefined, { enable_thinking: false }, { enable_thinking: true }]) {
      const session = model.createSession();
      const reply = await collect(session.chat(messages, { temperature: 0, maxTokens: kTokens, chatTemplateKwargs: kwargs }));
      const native = await nativeChat(kwargs);
      assert.equal(reply, native.reply, JSON.stringify(kwargs));
      assert.equal(session.lastStats.promptTokens, native.promptTokens, JSON.stringify(kwargs));
      const rendered = await model.applyChatTemplate(messages, { chatTemplateKwargs: kwargs });
      assert.equal((await model.tokenize(rendered, { parseSpecial: true })).length, native.promptTokens);
      results.push({ reply, rendered, promptTokens: native.promptTokens });
      await session.dispose();
    }
    // Only false changes the prompt (Qwen3's template leaves true to the model).
    const [plain, off, on] = results;
    assert.notEqual(off.rendered, plain.rendered);
    assert.ok(off.promptTokens > plain.promptTokens, `${off.promptTokens} vs ${plain.promptTokens}`);
    assert.equal(on.rendered, plain.rendered);
  });

  test('bad chatTemplateKwargs are clear errors', async () => {
    const session = model.createSession();
    const messages = [{ role: 'user', content: 'Hi' }];
    const chat = (kwargs) => collect(session.chat(messages, { maxTokens: 1, chatTemplateKwargs: kwargs }));
    await assert.rejects(chat({ thinking: false }), /chatTemplateKwargs\.thinking is not supported \(supported: enable_thinking\)/);
    await assert.rejects(chat({ enable_thinking: 'no' }), /chatTemplateKwargs\.enable_thinking must be a boolean/);
    await assert.rejects(chat([]), /chatTemplateKwargs must be an object/);
    await assert.rejects(collect(session.generate('Hi', { chatTemplateKwargs: { enable_thinking: false } })),
      /chatTemplateKwargs: only for chat/);
    await assert.rejects(model.applyChatTemplate(messages, { chatTemplateKwargs: { x: 1 } }), /chatTemplateKwargs\.x is not supported/);
    await session.dispose();
  });
});
