// runnel-llm's tools option with the real SmolLM2 in Node: toolChoice required and a
// named tool give call objects in session.lastReply.toolCalls (arguments parsed, valid
// under the tool's schema); a tool loop sends the result back; toolChoice none gives
// content; bad tools are clear errors. SmolLM2's template knows no tools, so calls come
// in the generic JSON form, grammar-forced.
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

const weather = {
  name: 'get_weather',
  description: 'Get the current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 40 } },
    required: ['city'],
    additionalProperties: false,
  },
};
const clock = { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } };
const question = [{ role: 'user', content: 'What is the weather like in Paris today?' }];

function checkWeatherCall(call) {
  assert.equal(call.name, 'get_weather');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(typeof call.arguments, 'object');
  assert.deepEqual(Object.keys(call.arguments), ['city']);
  assert.equal(typeof call.arguments.city, 'string');
}

describe('runnel-llm tools', () => {
  let model;
  let session;
  before(async () => {
    assert.ok(fs.existsSync(path.join(root, 'wasm/dist/runnel.wasm')), 'wasm/dist is missing: run `npm run build` in wasm/');
    model = await loadModel({ path: modelPath }, { contextSize: 1024 });
    session = await model.createSession();
  });
  after(async () => model?.dispose());

  test('toolChoice required gives a call object', async () => {
    const text = await collect(session.chat(question, {
      tools: [weather], toolChoice: 'required', parallelToolCalls: false, temperature: 0, maxTokens: 96,
    }));
    assert.equal(session.lastStats.finishReason, 'stop', text);
    const reply = session.lastReply;
    assert.equal(reply.content, '');
    assert.equal(reply.toolCalls.length, 1, text);
    checkWeatherCall(reply.toolCalls[0]);
    assert.ok(!('reply' in session.lastStats));
  });

  test('a named tool is the one called (OpenAI-shaped tools accepted)', async () => {
    await collect(session.chat([{ role: 'user', content: 'What time is it in Tokyo?' }], {
      tools: [{ type: 'function', function: clock }, weather], toolChoice: 'get_weather', temperature: 0, maxTokens: 128,
    }));
    assert.ok(session.lastReply.toolCalls.length >= 1);
    for (const call of session.lastReply.toolCalls) checkWeatherCall(call);
  });

  test('a tool loop: the result goes back with toolCallId and the model answers', async () => {
    await collect(session.chat(question, { tools: [weather], toolChoice: 'required', temperature: 0, maxTokens: 96 }));
    const calls = session.lastReply.toolCalls;
    const messages = [...question, { role: 'assistant', content: null, toolCalls: calls }];
    for (const call of calls) {
      checkWeatherCall(call);
      messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify({ city: call.arguments.city, sky: 'sunny' }) });
    }
    const text = await collect(session.chat(messages, { tools: [weather], toolChoice: 'none', temperature: 0, maxTokens: 24 }));
    assert.ok(text.length > 0);
    assert.equal(session.lastReply.content, text);
    assert.deepEqual(session.lastReply.toolCalls, []);
  });

  test('a plain chat has a reply with content only; generate() has none', async () => {
    const text = await collect(session.chat(question, { temperature: 0, maxTokens: 8 }));
    assert.deepEqual(session.lastReply, { content: text, reasoning: '', toolCalls: [] });
    await collect(session.generate('Once upon a time', { maxTokens: 4 }));
    assert.equal(session.lastReply, null);
  });

  test('bad tools are clear errors', async () => {
    await assert.rejects(collect(session.generate('x', { tools: [weather] })), /tools: only for chat/);
    await assert.rejects(collect(session.chat(question, { tools: weather })), /tools must be an array/);
    await assert.rejects(collect(session.chat(question, { tools: [weather], toolChoice: 'get_date' })),
      /tool_choice names the function 'get_date', which is not among the tools/);
    await assert.rejects(collect(session.chat(question, { tools: [{ type: 'retrieval' }] })),
      /tool type "retrieval" is not supported/);
    await assert.rejects(collect(session.chat([...question, { role: 'tool', content: 'x' }], { tools: [weather] })),
      /a tool message needs toolCallId/);
  });
});
