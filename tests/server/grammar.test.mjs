// Constrained output on runnel serve with the real SmolLM2 through the official `openai`
// client: response_format json_object / json_schema, llama-server's `grammar` and
// `json_schema` fields, streaming, and the 400s for malformed or conflicting constraints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { startServerWithClient, stopServerCleanly } from './lib/server.mjs';

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient()));
after(() => stopServerCleanly(server));

const person = [{ role: 'user', content: 'Describe a fictional person: name, age and hobbies.' }];

const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 24 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    hobbies: { type: 'array', items: { type: 'string', maxLength: 24 }, minItems: 1, maxItems: 3 },
  },
  required: ['name', 'age', 'hobbies'],
  additionalProperties: false,
};

function checkPerson(doc) {
  assert.deepEqual(Object.keys(doc).sort(), ['age', 'hobbies', 'name']);
  assert.equal(typeof doc.name, 'string');
  assert.ok(doc.name.length <= 24, doc.name);
  assert.ok(Number.isInteger(doc.age) && doc.age >= 0 && doc.age <= 120, String(doc.age));
  assert.ok(Array.isArray(doc.hobbies) && doc.hobbies.length >= 1 && doc.hobbies.length <= 3);
  for (const h of doc.hobbies) assert.ok(typeof h === 'string' && h.length <= 24, String(h));
}

test('response_format json_object: the reply parses as a JSON object, for greedy and sampled runs', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 3 }, { temperature: 1, seed: 4 }]) {
    const r = await client.chat.completions.create({
      messages: person, max_tokens: 300, response_format: { type: 'json_object' }, ...sampling,
    });
    const content = r.choices[0].message.content;
    assert.equal(r.choices[0].finish_reason, 'stop', content);
    const doc = JSON.parse(content);
    assert.equal(typeof doc, 'object', content);
    assert.ok(doc !== null && !Array.isArray(doc), content);
  }
});

test('response_format json_schema: the reply validates against the schema', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.8, seed: 11 }]) {
    const r = await client.chat.completions.create({
      messages: person, max_tokens: 300, ...sampling,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personSchema } },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    checkPerson(JSON.parse(r.choices[0].message.content));
  }
});

test("llama-server's json_schema field on /v1/completions, streamed and not", async () => {
  const params = {
    prompt: 'A person described as JSON:\n', max_tokens: 300, temperature: 0.7, seed: 5, json_schema: personSchema,
  };
  const whole = await client.completions.create(params);
  checkPerson(JSON.parse(whole.choices[0].text));
  const stream = await client.completions.create({ ...params, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'stop');
});

test('a GBNF grammar constrains chat and completions, and a complete grammar ends the reply', async () => {
  const grammar = 'root ::= ("yes" | "no") ", because " [a-z ]{1,40} "."';
  const r = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'Is the sky blue? Answer yes or no and say why.' }],
    temperature: 0, max_tokens: 100, grammar,
  });
  assert.match(r.choices[0].message.content, /^(yes|no), because [a-z ]{1,40}\.$/);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const c = await client.completions.create({
    prompt: 'The three primary colors are', temperature: 0.9, seed: 1, max_tokens: 50,
    grammar: 'root ::= " " color ", " color " and " color\ncolor ::= "red" | "green" | "blue" | "yellow"',
  });
  assert.match(c.choices[0].text, /^ (red|green|blue|yellow), (red|green|blue|yellow) and (red|green|blue|yellow)$/);
  assert.equal(c.choices[0].finish_reason, 'stop');
});

test('a malformed grammar is a 400 naming grammar with the line and column', async () => {
  await assert.rejects(
    client.completions.create({ prompt: 'x', max_tokens: 4, grammar: 'root ::= "a"\nitem ::= [a-z' }),
    (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'grammar');
      assert.equal(e.code, 'invalid_value');
      assert.match(e.message, /^400 grammar: line 2, column 14: expected '\]' to close the character class/);
      return true;
    },
  );
});

test('conflicting or unsupported constraints are 400s naming the fields', async () => {
  const cases = [
    [{ grammar: 'root ::= "a"', json_schema: {} }, 'grammar', /'grammar' and 'json_schema' each constrain the output/],
    [{ json_schema: {}, response_format: { type: 'json_object' } }, 'json_schema',
      /'json_schema' and 'response_format' each constrain the output/],
    [{ json_schema: { type: 'object', patternProperties: { '^a': {} } } }, 'json_schema', /patternProperties/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'nonsense' } } } },
      'response_format.json_schema.schema', /nonsense/],
    [{ response_format: { type: 'xml' } }, 'response_format.type', /json_object or json_schema/],
  ];
  for (const [fields, param, message] of cases) {
    await assert.rejects(
      client.chat.completions.create({ messages: person, max_tokens: 4, ...fields }),
      (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
        assert.equal(e.param, param);
        assert.match(e.message, message);
        return true;
      },
    );
  }
  // The server still serves afterwards.
  const r = await client.chat.completions.create({ messages: person, max_tokens: 4, temperature: 0 });
  assert.equal(r.usage.completion_tokens, 4);
});

test('a logit_bias that bans what the grammar allows: a 400 at the start, an error event mid-way', async () => {
  // SmolLM2 spells "a" only as token 81.
  await assert.rejects(
    client.completions.create({ prompt: 'Answer:', grammar: 'root ::= "a"', logit_bias: { 81: -100 } }),
    (e) => e.status === 400 && e.param === 'logit_bias' && /bans every token the output constraint allows/.test(e.message));
  // After "b" only "a" may follow: the stream ends with an error event, which the client raises.
  const stream = await client.completions.create({
    prompt: 'Answer:', grammar: 'root ::= "b" "a"', logit_bias: { 81: -100 }, max_tokens: 5, stream: true,
  });
  let text = '';
  await assert.rejects((async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  })(), /logit_bias bans every token the grammar allows after 1 generated token/);
  assert.equal(text, 'b');
  // Not streamed: the body is the error (its status went out with the first byte).
  const r = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Answer:', grammar: 'root ::= "b" "a"', logit_bias: { 81: -100 }, max_tokens: 5 }),
  });
  const body = JSON.parse(await r.text());
  assert.equal(body.error.code, 'generation_failed');
  // The server goes on serving.
  const ok = await client.completions.create({ prompt: 'Answer:', grammar: 'root ::= "b" "a"', max_tokens: 5 });
  assert.equal(ok.choices[0].text, 'ba');
});
