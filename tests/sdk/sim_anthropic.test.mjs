// The official `@anthropic-ai/sdk` npm SDK against `tokenradar sim`'s Anthropic dialect. This
// SDK version sends the key as `Authorization: Bearer` and no `x-api-key`, which the sim
// refused with 401 before it accepted both, as the real API does.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';

import { anthropicWeatherTool as weather } from './lib/fixtures.mjs';
import { SIM_KEY, startSim } from './lib/servers.mjs';


let sim;
let client;
let sentHeaders = [];
before(async () => {
  sim = await startSim();
  client = new Anthropic({
    apiKey: SIM_KEY, baseURL: sim.url, maxRetries: 0, timeout: 10_000,
    fetch: (url, init) => {
      sentHeaders.push(new Headers(init.headers));
      return fetch(url, init);
    },
  });
});

describe('@anthropic-ai/sdk -> sim', () => {
  test('messages.create with the SDK\'s own auth headers', async () => {
    sentHeaders = [];
    const message = await client.messages.create({
      model: 'claude-3-5-sonnet-latest', max_tokens: 6, messages: [{ role: 'user', content: 'Hello' }],
    });
    assert.equal(message.type, 'message');
    assert.equal(message.content[0].type, 'text');
    assert.ok(message.content[0].text.length > 0);
    assert.equal(message.stop_reason, 'max_tokens');
    assert.equal(message.usage.output_tokens, 6);
    assert.match(message.id, /^msg_/);
    // What made the sim answer 401 before: the key only as a bearer token.
    assert.equal(sentHeaders.length, 1);
    assert.equal(sentHeaders[0].get('authorization'), `Bearer ${SIM_KEY}`);
  });

  test('messages.stream text', async () => {
    const stream = client.messages.stream({
      model: 'claude-3-5-sonnet-latest', max_tokens: 9, messages: [{ role: 'user', content: 'Stream' }],
    });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    const final = await stream.finalMessage();
    assert.ok(text.length > 0);
    assert.equal(final.content[0].text, text);
    assert.equal(final.usage.output_tokens, 9);
  });

  test('tools: a streamed tool_use block with input_json_delta and stop_reason tool_use', async () => {
    const stream = client.messages.stream({
      model: 'claude-3-5-sonnet-latest', max_tokens: 16, tools: [weather],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    }, { headers: { 'x-sim-tokens-per-chunk': '4' } });
    let jsonDeltas = 0;
    stream.on('inputJson', () => { jsonDeltas += 1; });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const block = final.content.find((b) => b.type === 'tool_use');
    assert.ok(block, JSON.stringify(final.content));
    assert.match(block.id, /^toolu_/);
    assert.equal(block.name, 'get_weather');
    assert.equal(typeof block.input.city, 'string');
    assert.ok(Number.isInteger(block.input.days) && block.input.days >= 1);
    assert.equal(jsonDeltas, 4);
  });

  test('tools: non-streaming tool_use on x-sim-tool-call', async () => {
    const message = await client.messages.create({
      model: 'claude-3-5-sonnet-latest', max_tokens: 8, tools: [weather],
      messages: [{ role: 'user', content: 'Weather?' }],
    }, { headers: { 'x-sim-tool-call': 'always' } });
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(message.content[0].type, 'tool_use');
    assert.equal(typeof message.content[0].input.city, 'string');
  });

  test('models.retrieve', async () => {
    const model = await client.models.retrieve('claude-3-5-sonnet-latest');
    assert.equal(model.type, 'model');
    assert.equal(model.id, 'claude-3-5-sonnet-latest');
  });

  test('a wrong key is an AuthenticationError', async () => {
    const wrong = new Anthropic({ apiKey: 'sk-wrong', baseURL: sim.url, maxRetries: 0 });
    await assert.rejects(
      wrong.messages.create({ model: 'claude-3-5-sonnet-latest', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }),
      (err) => err instanceof Anthropic.AuthenticationError,
    );
  });
});
