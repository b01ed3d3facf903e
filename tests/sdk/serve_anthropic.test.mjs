// The official `@anthropic-ai/sdk` npm SDK against `tokenradar serve`'s Anthropic door
// (POST /v1/messages), which relays to `tokenradar sim`: model `fast` is the sim's OpenAI
// dialect, `claude` its Anthropic dialect. The SDK must not tell the door from Anthropic's API:
// whole messages, streams (its event parser and accumulator), tool_use blocks and typed errors.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';

import { anthropicWeatherTool as weather, user } from './lib/fixtures.mjs';
import { startServe, startSim } from './lib/servers.mjs';


let client;
before(async () => {
  const sim = await startSim('instant');
  const serve = await startServe(sim.url);
  client = new Anthropic({ apiKey: 'unused', baseURL: serve.url, maxRetries: 0, timeout: 10_000 });
});

describe('@anthropic-ai/sdk -> serve /v1/messages -> sim', () => {
  for (const model of ['fast', 'claude']) {
    test(`${model}: messages.create`, async () => {
      const message = await client.messages.create({
        model, max_tokens: 6, system: 'Be brief.', messages: user('Hello'),
      });
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.equal(message.content[0].type, 'text');
      assert.ok(message.content[0].text.length > 0);
      assert.equal(message.stop_reason, 'max_tokens');
      assert.equal(message.usage.output_tokens, 6);
      assert.ok(message.usage.input_tokens > 0);
    });

    test(`${model}: messages.stream text`, async () => {
      const stream = client.messages.stream({ model, max_tokens: 9, messages: user('Stream') });
      let text = '';
      stream.on('text', (delta) => { text += delta; });
      const final = await stream.finalMessage();
      assert.ok(text.length > 0);
      assert.equal(final.content[0].text, text);
      assert.equal(final.stop_reason, 'max_tokens');
      assert.equal(final.usage.output_tokens, 9);
    });

    test(`${model}: a streamed tool_use block`, async () => {
      const stream = client.messages.stream({
        model, max_tokens: 16, tools: [weather], tool_choice: { type: 'tool', name: 'get_weather' },
        messages: user('Weather in Oslo?'),
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, 'tool_use');
      const block = final.content.find((b) => b.type === 'tool_use');
      assert.ok(block, JSON.stringify(final.content));
      assert.equal(block.name, 'get_weather');
      assert.ok(block.id.length > 0);
      assert.equal(typeof block.input.city, 'string');
      assert.ok(Number.isInteger(block.input.days) && block.input.days >= 1);
    });

    test(`${model}: a tool result goes back and is answered`, async () => {
      const message = await client.messages.create({
        model, max_tokens: 5, tools: [weather],
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Oslo', days: 1 } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'Sunny, 21 C' }] },
        ],
      });
      assert.equal(message.content[0].type, 'text');
      assert.equal(message.usage.output_tokens, 5);
    });
  }

  test('an unknown model is a NotFoundError', async () => {
    await assert.rejects(
      client.messages.create({ model: 'nope', max_tokens: 1, messages: user('x') }),
      (err) => err instanceof Anthropic.NotFoundError && /nope/.test(err.message),
    );
  });

  test('messages.countTokens: forwarded to an Anthropic upstream, a BadRequestError otherwise', async () => {
    const counted = await client.messages.countTokens({ model: 'claude', system: 'Be brief.', messages: user('Hello') });
    assert.ok(Number.isInteger(counted.input_tokens) && counted.input_tokens > 0, JSON.stringify(counted));
    const message = await client.messages.create({
      model: 'claude', max_tokens: 2, system: 'Be brief.', messages: user('Hello'),
    });
    assert.equal(message.usage.input_tokens, counted.input_tokens);
    await assert.rejects(
      client.messages.countTokens({ model: 'fast', messages: user('Hello') }),
      (err) => err instanceof Anthropic.BadRequestError && /no Anthropic upstream/.test(err.message),
    );
  });

  test('a malformed request is a BadRequestError naming the field', async () => {
    await assert.rejects(
      client.messages.create({ model: 'fast', max_tokens: 1, messages: [{ role: 'robot', content: 'x' }] }),
      (err) => err instanceof Anthropic.BadRequestError && /role/.test(err.message),
    );
  });
});
