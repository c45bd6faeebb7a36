// The official client's structured-output path: `client.beta.chat.completions.parse`
// with a zod schema (`zodResponseFormat` turns it into response_format json_schema,
// strict). The reply must come back parsed and valid under the zod schema, for a greedy
// and two sampled runs of the real SmolLM2.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import { startServerWithClient, stopServerCleanly } from './lib/server.mjs';

let server;
let client;

before(async () => ({ server, client } = await startServerWithClient()));
after(() => stopServerCleanly(server));

const Event = z.object({
  title: z.string().max(40),
  day: z.enum(['monday', 'tuesday', 'wednesday', 'thursday', 'friday']),
  attendees: z.array(z.object({ name: z.string().max(24), confirmed: z.boolean() })).max(3),
  hours: z.number().int().min(1).max(8),
});

test('beta.chat.completions.parse with a zod schema gives a parsed, valid object', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 5 }, { temperature: 1, seed: 6 }]) {
    const r = await client.beta.chat.completions.parse({
      messages: [{ role: 'user', content: 'Plan a team meeting: title, day, attendees and length in hours.' }],
      max_tokens: 300,
      response_format: zodResponseFormat(Event, 'event'),
      ...sampling,
    });
    const message = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', JSON.stringify(message.content));
    assert.ok(message.parsed, `not parsed: ${JSON.stringify(message.content)}`);
    // The client parsed it with the schema; check it again independently of that.
    const again = Event.safeParse(JSON.parse(message.content));
    assert.ok(again.success, `${message.content}: ${JSON.stringify(again.error?.issues)}`);
    assert.deepEqual(message.parsed, again.data);
  }
});
