// The official `openai` npm SDK against `tokenradar serve`, which relays to `tokenradar sim`:
// model `fast` is the sim's OpenAI dialect (passthrough), `claude` its Anthropic dialect
// (translated both ways). The sim runs the `fixed` profile (TTFT 250 ms, 20 ms per token) so a
// stream can be left midway.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { checkWeatherArguments, user, weatherTool } from './lib/fixtures.mjs';
import { eventually, simStats, startServe, startSim } from './lib/servers.mjs';

let sim;
let client;
before(async () => {
  sim = await startSim('fixed');
  const serve = await startServe(sim.url);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${serve.url}/v1`, maxRetries: 0, timeout: 10_000 });
});

describe('openai SDK -> serve -> sim', () => {
  for (const model of ['fast', 'claude']) {
    test(`${model}: non-streaming and streaming`, async () => {
      const completion = await client.chat.completions.create({ model, max_tokens: 4, messages: user('Hi') });
      assert.ok(completion.choices[0].message.content.length > 0);
      assert.equal(completion.usage.completion_tokens, 4);

      const stream = await client.chat.completions.create({
        model, max_tokens: 5, stream: true, stream_options: { include_usage: true }, messages: user('Hi'),
      });
      let text = '';
      let usage;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      assert.ok(text.length > 0);
      assert.equal(usage.completion_tokens, 5);
    });

    test(`${model}: a streamed tool call arrives whole`, async () => {
      const completion = await client.chat.completions.stream({
        model, max_tokens: 6, messages: user('Weather in Rome?'), tools: [weatherTool], tool_choice: 'required',
      }).finalChatCompletion();
      const choice = completion.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
      checkWeatherArguments(assert, JSON.parse(choice.message.tool_calls[0].function.arguments));
    });
  }

  test('abort mid-stream ends the upstream stream too', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create({
      model: 'fast', max_tokens: 200, stream: true, messages: user('Long'),
    }, { signal: controller.signal });
    let chunks = 0;
    // The SDK ends the iteration quietly when its own signal aborts it.
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) chunks += 1;
      if (chunks === 2) controller.abort();
    }
    assert.equal(chunks, 2, 'no chunk after the abort');
    assert.ok(await eventually(async () => (await simStats(sim.url)).running === 0),
      'the gateway closes its upstream stream when the client leaves');
  });

  test('models.list', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.ok(ids.includes('fast') && ids.includes('claude'), ids.join(','));
  });

  test('models.retrieve', async () => {
    const model = await client.models.retrieve('fast');
    assert.equal(model.id, 'fast');
  });

  test('_request_id is the upstream\'s x-request-id', async () => {
    const completion = await client.chat.completions.create({ model: 'fast', max_tokens: 1, messages: user('Hi') });
    assert.match(completion._request_id ?? '', /^chatcmpl-/);
  });

  // The legacy text completions (`client.completions.create`), passed through to the OpenAI
  // upstream whole and streamed; a model without an OpenAI upstream is a 400 saying so.
  test('fast: legacy completions, whole and streamed', async () => {
    const completion = await client.completions.create({ model: 'fast', prompt: 'Once upon a time', max_tokens: 4 });
    assert.equal(completion.object, 'text_completion');
    assert.ok(completion.choices[0].text.length > 0);
    assert.equal(completion.choices[0].finish_reason, 'length');
    assert.equal(completion.usage.completion_tokens, 4);
    assert.match(completion._request_id ?? '', /^cmpl-/);

    const stream = await client.completions.create({
      model: 'fast', prompt: ['Once upon a time'], max_tokens: 5, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'text_completion');
      const piece = chunk.choices[0]?.text ?? '';
      if (piece) chunks += 1;
      text += piece;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(text.length > 0);
    assert.equal(chunks, 5, 'one chunk per token, as the fixed profile sends them');
    assert.equal(usage.completion_tokens, 5);
  });

  test('claude: legacy completions need an OpenAI upstream', async () => {
    await assert.rejects(client.completions.create({ model: 'claude', prompt: 'Hi' }),
      (error) => error instanceof OpenAI.BadRequestError && /no OpenAI-compatible upstream/.test(error.message));
  });

  // A cached answer read back through the SDK: the hit must parse as the miss did, whether
  // the entry was made by a stream or a JSON answer, and never reach the upstream.
  for (const model of ['fast-cached', 'claude-cached']) {
    test(`${model}: a hit reads as the miss did, JSON and stream, from one entry`, async () => {
      const body = { model, max_tokens: 6, temperature: 0, messages: user(`Cache me (${model})`) };
      const miss = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      assert.equal(miss.response.headers.get('x-tokenradar-cache'), 'miss');
      let missText = '';
      let missUsage;
      for await (const chunk of miss.data) {
        missText += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) missUsage = chunk.usage;
      }
      assert.ok(missText.length > 0);
      const upstreamRequests = (await simStats(sim.url)).requests;

      const json = await client.chat.completions.create(body).withResponse();
      assert.equal(json.response.headers.get('x-tokenradar-cache'), 'exact');
      assert.equal(json.data.choices[0].message.content, missText);
      assert.equal(json.data.choices[0].finish_reason, 'length');
      assert.equal(json.data.usage.completion_tokens, missUsage.completion_tokens);
      assert.equal(json.data.usage.prompt_tokens, missUsage.prompt_tokens);

      const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      assert.equal(stream.response.headers.get('x-tokenradar-cache'), 'exact');
      let text = '';
      let chunks = 0;
      let usage;
      for await (const chunk of stream.data) {
        const delta = chunk.choices[0]?.delta?.content ?? '';
        if (delta) chunks += 1;
        text += delta;
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, missText);
      assert.ok(chunks > 1, `the original chunks, not one collapsed chunk (${chunks})`);
      assert.equal(usage.completion_tokens, missUsage.completion_tokens);
      // The sim counts every request it reads, /sim/stats too: one more is this one.
      assert.equal((await simStats(sim.url)).requests, upstreamRequests + 1, 'hits never reach the upstream');
    });

    test(`${model}: a cached tool call arrives whole`, async () => {
      const body = {
        model, max_tokens: 6, temperature: 0, messages: user(`Weather in Oslo? (${model})`),
        tools: [weatherTool], tool_choice: 'required',
      };
      const first = await client.chat.completions.stream(body).finalChatCompletion();
      const again = client.chat.completions.stream(body);
      const completion = await again.finalChatCompletion();
      const choice = completion.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
      assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments),
        JSON.parse(first.choices[0].message.tool_calls[0].function.arguments));
      checkWeatherArguments(assert, JSON.parse(choice.message.tool_calls[0].function.arguments));
    });
  }

  test('Cache-Control: no-store bypasses the cache', async () => {
    const body = { model: 'fast-cached', max_tokens: 2, temperature: 0, messages: user('Never stored') };
    const headers = { 'Cache-Control': 'no-store' };
    await client.chat.completions.create(body, { headers });
    const again = await client.chat.completions.create(body, { headers }).withResponse();
    assert.equal(again.response.headers.get('x-tokenradar-cache'), 'bypass');
  });
});
