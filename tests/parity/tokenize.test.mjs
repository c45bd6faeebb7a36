// Tokenization parity: `runnel tokenize --ids` against llama.cpp's tokenizer on the
// same model, for inputs that exercise the pre-tokenizer and byte-level BPE.
import assert from "node:assert/strict";
import {before, describe, test} from "node:test";

import {loadLlamaModel, missingPrerequisite, runnelTokenize} from "./lib/peers.mjs";
import {TOKENIZE_PROMPTS} from "./lib/prompts.mjs";

const skip = missingPrerequisite() ?? false;

describe("tokenize parity with llama.cpp", {skip}, () => {
  let model;
  before(async () => { model = await loadLlamaModel(); });

  // Plain text, no BOS, special-token text kept as text: llama.cpp's
  // tokenize(text, false) has exactly these semantics.
  for (const [i, prompt] of TOKENIZE_PROMPTS.entries()) {
    test(`#${i} ${JSON.stringify(prompt).slice(0, 48)}`, async () => {
      const expected = model.tokenize(prompt, false);
      const actual = await runnelTokenize(prompt);
      assert.deepEqual(actual, expected,
                       `runnel: [${actual}]\nllama.cpp: [${expected}]\ntext: ${JSON.stringify(prompt)}`);
    });
  }

  test("BOS follows the model's add_bos_token metadata", async () => {
    const prompt = "Hello world";
    const plain = model.tokenize(prompt, false);
    const expected = model.tokens.shouldPrependBosToken ? [model.tokens.bos, ...plain] : plain;
    assert.deepEqual(await runnelTokenize(prompt, {bos: true}), expected,
                     `shouldPrependBosToken=${model.tokens.shouldPrependBosToken} bos=${model.tokens.bos}`);
  });

  test("--special turns chat markup into control tokens", async () => {
    const prompt = "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n";
    const expected = model.tokenize(prompt, true);
    const actual = await runnelTokenize(prompt, {special: true});
    assert.deepEqual(actual, expected);
    // The markup must really have become single tokens, or the comparison proves little.
    assert.ok(expected.length < model.tokenize(prompt, false).length);
  });
});
