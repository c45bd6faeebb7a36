// Tokenization parity on Gemma 3 270M (SPM, 262144 tokens, no space prefix, byte
// fallback, user-defined whitespace tokens): `runnel tokenize --ids` against llama.cpp
// on the same file, for the shared prompts and for inputs aimed at SPM's corners.
// The model is models/gemma-3-270m-q4_k_m.gguf (RUNNEL_GEMMA_MODEL overrides it); the
// suite is skipped, saying why, when it is absent.
import assert from "node:assert/strict";
import {existsSync} from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {before, describe, test} from "node:test";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const gemmaPath = process.env.RUNNEL_GEMMA_MODEL ?? path.join(repoRoot, "models/gemma-3-270m-q4_k_m.gguf");
// lib/peers.mjs reads the model path from RUNNEL_MODEL when it loads: point it at Gemma
// before importing it (node --test runs each file in its own process).
process.env.RUNNEL_MODEL = gemmaPath;
const {loadLlamaModel, missingPrerequisite, runnelTokenize} = await import("./lib/peers.mjs");
const {TOKENIZE_PROMPTS} = await import("./lib/prompts.mjs");

const skip = existsSync(gemmaPath)
    ? (missingPrerequisite() ?? false)
    : `no Gemma model at ${gemmaPath} (set RUNNEL_GEMMA_MODEL)`;

// What SPM with Gemma's vocabulary meets beyond the shared prompts: runs of spaces,
// tabs and newlines (Gemma has tokens for them), text starting with spaces (no space
// prefix), characters only the byte fallback covers, and Gemma's own markup as text.
const GEMMA_PROMPTS = [
  "Hello",
  " Hello",
  "  Hello",
  "\nHello",
  "a\n\nb\n\n\nc\n\n\n\n\n\n\n\n\n\n\n\n\n\nd",
  "x  y   z    w     v      u                                 t",
  "\t\t\tindented\n\t\t\t\tmore",
  "trailing newline\n",
  "\u0001\u0002 control \u007f bytes \u00a0nbsp",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀 \u{10FFFD} ꙮ",
  "ﬁ ligature, Ｆｕｌｌｗｉｄｔｈ, ℌ𝔢𝔩𝔩𝔬",
  "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
  "<bos><eos><pad><mask> <unk>",
  "[multimodal] <start_of_image> <end_of_image>",
  "",
];

describe("Gemma 3 tokenize parity with llama.cpp", {skip}, () => {
  let model;
  before(async () => { model = await loadLlamaModel(); });

  // Plain text, no BOS, special-token text kept as text: tokenize(text, false).
  for (const [i, prompt] of [...TOKENIZE_PROMPTS, ...GEMMA_PROMPTS].entries()) {
    test(`#${i} ${JSON.stringify(prompt).slice(0, 48)}`, async () => {
      const expected = model.tokenize(prompt, false);
      const actual = await runnelTokenize(prompt);
      assert.deepEqual(actual, expected,
                       `runnel: [${actual}]\nllama.cpp: [${expected}]\ntext: ${JSON.stringify(prompt)}`);
    });
  }

  test("BOS follows add_bos_token (true for Gemma)", async () => {
    const prompt = "Hello world";
    assert.equal(model.tokens.shouldPrependBosToken, true);
    const expected = [model.tokens.bos, ...model.tokenize(prompt, false)];
    assert.deepEqual(await runnelTokenize(prompt, {bos: true}), expected);
  });

  // The built-in Gemma template's rendering of a system + user + assistant + user chat,
  // and the same markup without BOS, parsed for special tokens as a chat request is.
  const chats = [
    "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n" +
        "<start_of_turn>model\nHi there, how can I help?<end_of_turn>\n" +
        "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
  ];
  for (const [i, prompt] of chats.entries()) {
    test(`--special turns Gemma's chat markup into control tokens #${i}`, async () => {
      const expected = model.tokenize(prompt, true);
      assert.deepEqual(await runnelTokenize(prompt, {special: true}), expected);
      // The markup must really have become single tokens, or the comparison proves little.
      assert.ok(expected.length < model.tokenize(prompt, false).length);
    });
  }
});
