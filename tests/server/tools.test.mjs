// Tool calls through runnel serve on the real SmolLM2, driven by the official `openai`
// npm client: tool_choice required and a named function give a call that parses and
// validates against the tool's schema (the call is grammar-forced); a whole tool loop
// (the client runs a local function and sends its result back with tool_call_id);
// streamed calls assemble (the client's stream helper) to the non-streamed call;
// tool_choice none gives content; malformed tools are a 400 naming the field.
// SmolLM2's template knows no tools: calls come in the generic JSON form. A 135M model
// is not asked to choose well, only to produce calls of the right shape.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startServerWithClient, stopServerCleanly } from './lib/server.mjs';

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient()));
after(() => stopServerCleanly(server));

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
const timeTool = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Get the current time in a time zone',
    parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
  },
};
const question = [{ role: 'user', content: 'What is the weather like in Paris today?' }];

// The call's arguments: JSON text of an object valid under get_weather's schema.
function weatherArguments(call) {
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args, 'object');
  assert.equal(typeof args.city, 'string');
  for (const key of Object.keys(args)) assert.ok(['city', 'unit'].includes(key), `unexpected argument ${key}`);
  if ('unit' in args) assert.ok(['celsius', 'fahrenheit'].includes(args.unit));
  return args;
}

// The local function the loop runs.
function getWeather({ city }) {
  return { city, temperature_c: 21, sky: 'sunny' };
}

test('tool_choice required gives a call that parses, finish_reason tool_calls', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      messages: question, tools: [weatherTool, timeTool], tool_choice: 'required',
      parallel_tool_calls: false, temperature: 1, seed, max_tokens: 128,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.ok(['get_weather', 'get_time'].includes(call.function.name));
    const args = JSON.parse(call.function.arguments);
    assert.equal(typeof (call.function.name === 'get_weather' ? args.city : args.zone), 'string');
  }
});

test('a named function is the one called', async () => {
  const r = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'What time is it in Tokyo?' }], tools: [timeTool, weatherTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 0, max_tokens: 128,
  });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.ok(r.choices[0].message.tool_calls.length >= 1);
  for (const call of r.choices[0].message.tool_calls) weatherArguments(call);
});

test('a tool loop: the client runs the call and sends the result back, the server answers', async () => {
  const messages = [...question];
  let calls = 0;
  for (let round = 0; round < 3; round++) {
    const last = round === 2;
    const r = await client.chat.completions.create({
      messages, tools: [weatherTool], temperature: 0, max_tokens: 96,
      // The first round must call; the last must answer.
      tool_choice: round === 0 ? 'required' : last ? 'none' : 'auto',
    });
    const message = r.choices[0].message;
    if (!message.tool_calls) {
      assert.ok(round > 0, 'the first round was required to call');
      assert.notEqual(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(typeof message.content, 'string');
      assert.ok(message.content.length > 0);
      assert.ok(calls >= 1);
      return;
    }
    assert.ok(!last, 'tool_choice none made a call');
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    messages.push(message);  // the assistant's calls, content null, as the client got them
    for (const call of message.tool_calls) {
      const result = getWeather(weatherArguments(call));
      calls++;
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    }
  }
  assert.fail('the loop never ended with an answer');
});

test('streamed tool calls assemble to the non-streamed call (greedy)', async () => {
  const params = { messages: question, tools: [weatherTool], tool_choice: 'required', temperature: 0, max_tokens: 128 };
  const whole = await client.chat.completions.create(params);
  const stream = client.beta.chat.completions.stream(params);
  let firstDeltas = 0;
  stream.on('chunk', (chunk) => {
    for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (d.id) {
        firstDeltas++;
        assert.equal(d.type, 'function');
        assert.equal(typeof d.function.name, 'string');
      }
    }
  });
  const streamed = await stream.finalChatCompletion();
  const a = whole.choices[0].message.tool_calls;
  const b = streamed.choices[0].message.tool_calls;
  assert.equal(streamed.choices[0].finish_reason, 'tool_calls');
  assert.equal(b.length, a.length);
  assert.equal(firstDeltas, a.length);
  for (let i = 0; i < a.length; i++) {
    weatherArguments(b[i]);
    assert.equal(b[i].function.name, a[i].function.name);
    assert.equal(b[i].function.arguments, a[i].function.arguments);
  }
});

test('tool_choice none gives content and no calls', async () => {
  const r = await client.chat.completions.create({
    messages: question, tools: [weatherTool], tool_choice: 'none', temperature: 0, max_tokens: 24,
  });
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.notEqual(r.choices[0].finish_reason, 'tool_calls');
});

test('a bad tools array or tool_choice is a 400 naming the field', async () => {
  const cases = [
    [{ tools: 'get_weather' }, 'tools'],
    [{ tools: [{ type: 'code_interpreter' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools[0].function.name'],
    [{ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools'],
    [{ tools: [weatherTool, weatherTool] }, 'tools'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: 3 } }] }, 'tools[0].function.parameters'],
    [{ tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_time' } } }, 'tool_choice'],
    [{ tools: [weatherTool], tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [weatherTool], tool_choice: 'required', response_format: { type: 'json_object' } }, 'response_format'],
    [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
    [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{' } }] }] },
      'messages[0].tool_calls[0].function.arguments'],
  ];
  for (const [fields, param] of cases) {
    await assert.rejects(client.chat.completions.create({ messages: question, max_tokens: 4, ...fields }), (e) => {
      assert.equal(e.status, 400, JSON.stringify(fields));
      assert.equal(e.param, param, `${JSON.stringify(fields)}: ${e.message}`);
      return true;
    });
  }
});
