// The official `openai` npm SDK against `tokenradar sim`'s OpenAI dialect: what an
// application written for OpenAI sees when pointed at the sim.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { checkWeatherArguments, timeTool, user, weatherTool } from './lib/fixtures.mjs';
import { eventually, SIM_KEY, simStats, startSim } from './lib/servers.mjs';

let sim;
let client;
before(async () => {
  sim = await startSim();
  client = new OpenAI({ apiKey: SIM_KEY, baseURL: `${sim.url}/v1`, maxRetries: 0, timeout: 10_000 });
});

describe('openai SDK -> sim', () => {
  test('non-streaming completion with usage and request id', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 7, messages: user('Say something.'),
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices.length, 1);
    assert.equal(typeof completion.choices[0].message.content, 'string');
    assert.ok(completion.choices[0].message.content.length > 0);
    assert.equal(completion.choices[0].finish_reason, 'length');
    assert.equal(completion.usage.completion_tokens, 7);
    assert.ok(completion.usage.prompt_tokens > 0);
    assert.match(completion._request_id, /^chatcmpl-/);
  });

  test('stream with include_usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 12, stream: true, stream_options: { include_usage: true },
      messages: user('Stream something.'),
    });
    let text = '';
    let usage;
    let finish;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(text.length > 0);
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 12);
  });

  test('tools: a streamed call assembles into arguments that match the schema', async () => {
    const runner = client.chat.completions.stream({
      model: 'gpt-4o', max_tokens: 30, messages: user('Weather in Paris?'),
      tools: [weatherTool, timeTool], tool_choice: { type: 'function', function: { name: 'get_weather' } },
    }, { headers: { 'x-sim-tokens-per-chunk': '3' } });
    let argumentDeltas = 0;
    runner.on('chunk', (chunk) => {
      for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) {
        if (call.function?.arguments) argumentDeltas += 1;
      }
    });
    const completion = await runner.finalChatCompletion();
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    checkWeatherArguments(assert, JSON.parse(call.function.arguments));
    // strict tools are parsed by the SDK itself
    checkWeatherArguments(assert, call.function.parsed_arguments);
    assert.equal(argumentDeltas, 10, 'arguments stream in fragments, one per chunk of 3 tokens');
  });

  test('tools: non-streaming call on x-sim-tool-call, text after the tool result', async () => {
    const first = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 10, messages: user('What time is it in Tokyo?'), tools: [timeTool],
    }, { headers: { 'x-sim-tool-call': 'always' } });
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.equal(first.choices[0].message.content, null);
    assert.equal(call.function.name, 'get_time');
    assert.equal(typeof JSON.parse(call.function.arguments).tz, 'string');

    const second = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 10, tools: [timeTool],
      messages: [...user('What time is it in Tokyo?'), first.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: '10:00' }],
    });
    assert.equal(second.choices[0].message.tool_calls, undefined);
    assert.ok(second.choices[0].message.content.length > 0);
  });

  test('response_format json_schema: chat.completions.parse gets a parsed object', async () => {
    const completion = await client.chat.completions.parse({
      model: 'gpt-4o', max_tokens: 20, messages: user('Rate this.'),
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'rating', strict: true,
          schema: {
            type: 'object', additionalProperties: false, required: ['summary', 'stars'],
            properties: { summary: { type: 'string' }, stars: { type: 'integer', minimum: 1, maximum: 5 } },
          },
        },
      },
    });
    const parsed = completion.choices[0].message.parsed;
    assert.equal(typeof parsed.summary, 'string');
    assert.ok(parsed.stars >= 1 && parsed.stars <= 5);
    assert.equal(completion.choices[0].finish_reason, 'stop');
  });

  test('response_format json_object: the content is a JSON object', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 5, messages: user('JSON please.'), response_format: { type: 'json_object' },
    });
    const value = JSON.parse(completion.choices[0].message.content);
    assert.equal(typeof value, 'object');
  });

  test('n > 1 is a 400 naming n', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o', n: 2, messages: user('Two answers.') }),
      (err) => err instanceof OpenAI.BadRequestError && /n = 1 only/.test(err.message),
    );
  });

  test('abort mid-stream frees the sim', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create({
      model: 'gpt-4o', max_tokens: 200, stream: true, messages: user('A long answer.'),
    }, { signal: controller.signal, headers: { 'x-sim-tpot-ms': '20' } });
    let chunks = 0;
    // The SDK ends the iteration quietly when its own signal aborts it.
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) chunks += 1;
      if (chunks === 3) controller.abort();
    }
    assert.equal(chunks, 3, 'no chunk after the abort');
    assert.ok(await eventually(async () => (await simStats(sim.url)).running === 0),
      'the sim ends the abandoned stream');
  });

  test('429 is retried after retry-after, then succeeds', async () => {
    const attempts = [];
    const retrying = new OpenAI({
      apiKey: SIM_KEY, baseURL: `${sim.url}/v1`, maxRetries: 2,
      // The first attempt asks the sim for a 429; the SDK's retry does not.
      fetch: (url, init) => {
        const headers = new Headers(init.headers);
        attempts.push(headers.get('x-stainless-retry-count'));
        if (attempts.length === 1) headers.set('x-sim-fault', '429');
        return fetch(url, { ...init, headers });
      },
    });
    const completion = await retrying.chat.completions.create({
      model: 'gpt-4o', max_tokens: 3, messages: user('Retry me.'),
    });
    assert.equal(completion.usage.completion_tokens, 3);
    assert.deepEqual(attempts, ['0', '1']);
  });

  test('429 without retries is a RateLimitError', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o', messages: user('hi') }, { headers: { 'x-sim-fault': '429' } }),
      (err) => err instanceof OpenAI.RateLimitError && err.status === 429,
    );
  });

  test('a wrong key is an AuthenticationError', async () => {
    const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL: `${sim.url}/v1`, maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (err) => err instanceof OpenAI.AuthenticationError);
  });

  test('responses.create: the sim speaks the Responses API too', async () => {
    const response = await client.responses.create({
      model: 'gpt-4o', instructions: 'Be brief.', input: 'Say something.', max_output_tokens: 7,
      store: false,
    });
    assert.equal(response.object, 'response');
    assert.match(response.id, /^resp_/);
    assert.equal(response.status, 'incomplete');
    assert.equal(response.incomplete_details.reason, 'max_output_tokens');
    assert.ok(response.output_text.length > 0);
    assert.equal(response.usage.output_tokens, 7);
    assert.ok(response.usage.input_tokens > 0);
  });

  test('responses.stream: typed events, accumulated by the SDK, and a function call', async () => {
    const stream = client.responses.stream({ model: 'gpt-4o', input: 'Stream something.', max_output_tokens: 5 });
    let text = '';
    stream.on('response.output_text.delta', (event) => { text += event.delta; });
    const final = await stream.finalResponse();
    assert.ok(text.length > 0);
    assert.equal(final.output_text, text);
    assert.equal(final.usage.output_tokens, 5);

    const called = await client.responses.create({
      model: 'gpt-4o', input: 'Weather in Paris?', max_output_tokens: 20,
      tools: [{ type: 'function', ...weatherTool.function }],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    const call = called.output.find((item) => item.type === 'function_call');
    assert.ok(call, JSON.stringify(called.output));
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_/);
    checkWeatherArguments(assert, JSON.parse(call.arguments));
  });

  test('models.list and models.retrieve', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.ok(ids.includes('gpt-4o'), ids.join(','));
    const model = await client.models.retrieve('gpt-4o');
    assert.equal(model.id, 'gpt-4o');
    assert.equal(model.object, 'model');
    await assert.rejects(client.models.retrieve('no-such-model'), (err) => err instanceof OpenAI.NotFoundError);
  });
});
