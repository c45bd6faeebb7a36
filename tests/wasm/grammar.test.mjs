// runnel-llm's grammar and jsonSchema options (the server's grammar / json_schema) with
// the real SmolLM2 in Node: the output follows the grammar or validates against the
// schema, for greedy and sampled runs, in generate() and chat(); bad constraints are
// clear errors.
//   RUNNEL_MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../wasm/js/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelPath = process.env.RUNNEL_MODEL ?? path.join(root, 'models/SmolLM2-135M-Instruct.Q4_1.gguf');

async function collect(iterable) {
  let text = '';
  for await (const piece of iterable) text += piece;
  return text;
}

const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 24 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
  },
  required: ['name', 'age'],
  additionalProperties: false,
};

describe('runnel-llm grammar / jsonSchema', () => {
  let model;
  let session;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'wasm/dist/runnel.wasm')), 'wasm/dist is missing: run `npm run build` in wasm/');
    model = await loadModel({ path: modelPath }, { contextSize: 512 });
    session = await model.createSession();
  });
  after(async () => model?.dispose());

  test('generate with a GBNF grammar gives grammar-conforming text and ends when it is complete', async () => {
    const grammar = 'root ::= " " color ", " color " and " color\ncolor ::= "red" | "green" | "blue" | "yellow"';
    const language = /^ (red|green|blue|yellow), (red|green|blue|yellow) and (red|green|blue|yellow)$/;
    for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 1 }, { temperature: 1, seed: 2 }]) {
      const text = await collect(session.generate('The three primary colors are', { maxTokens: 60, grammar, ...sampling }));
      assert.match(text, language);
      assert.equal(session.lastStats.finishReason, 'stop');
      assert.ok(session.lastStats.generatedTokens < 60);
    }
  });

  test('chat with jsonSchema (an object or its JSON text) gives JSON valid under the schema', async () => {
    const messages = [{ role: 'user', content: 'Describe a fictional person as JSON.' }];
    for (const jsonSchema of [personSchema, JSON.stringify(personSchema)]) {
      const text = await collect(session.chat(messages, { maxTokens: 200, temperature: 0, jsonSchema }));
      const doc = JSON.parse(text);
      assert.deepEqual(Object.keys(doc).sort(), ['age', 'name']);
      assert.equal(typeof doc.name, 'string');
      assert.ok(doc.name.length <= 24);
      assert.ok(Number.isInteger(doc.age) && doc.age >= 0 && doc.age <= 120);
    }
    const any = await collect(session.chat(messages, { maxTokens: 200, temperature: 0.8, seed: 7, jsonSchema: {} }));
    JSON.parse(any);
  });

  test('bad constraints are clear errors; the session still works afterwards', async () => {
    await assert.rejects(collect(session.generate('x', { grammar: 'root ::= [a-z' })),
      /^Error: grammar: line 1, column 14: expected '\]' to close the character class/);
    await assert.rejects(collect(session.generate('x', { grammar: 'root ::= "a"', jsonSchema: {} })),
      /grammar and jsonSchema each constrain the output/);
    await assert.rejects(collect(session.generate('x', { grammar: 3 })), /grammar must be a non-empty string/);
    await assert.rejects(collect(session.generate('x', { jsonSchema: [1] })), /jsonSchema must be a JSON schema/);
    await assert.rejects(collect(session.generate('x', { jsonSchema: '{bad' })), /jsonSchema: the schema is not valid JSON/);
    await assert.rejects(collect(session.generate('x', { jsonSchema: { type: 'object', patternProperties: {} } })),
      /jsonSchema .*patternProperties/);
    const text = await collect(session.generate('Yes or no?', { maxTokens: 8, temperature: 0, grammar: 'root ::= "yes" | "no"' }));
    assert.match(text, /^(yes|no)$/);
  });
});
