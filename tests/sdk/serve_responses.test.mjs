// The official `openai` npm SDK's Responses API (`client.responses.create`, `.stream`) against
// `tokenradar serve`'s Responses door (POST /v1/responses), which relays to `tokenradar sim`:
// model `fast` is the sim's OpenAI dialect, `claude` its Anthropic dialect, `gemini` its Gemini
// dialect. The SDK must not tell the door from OpenAI's API: whole responses, typed event
// streams (its accumulator checks every index), function calls, a tool-call round trip and
// typed errors that name the field.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';

import { weatherTool, checkWeatherArguments } from './lib/fixtures.mjs';
import { startServe, startSim } from './lib/servers.mjs';

// get_weather as a Responses function tool (flat: no `function` wrapper).
const weather = { type: 'function', ...weatherTool.function };
const forceWeather = { tools: [weather], tool_choice: { type: 'function', name: 'get_weather' } };

let client;
before(async () => {
  const sim = await startSim('instant');
  const serve = await startServe(sim.url);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${serve.url}/v1`, maxRetries: 0, timeout: 10_000 });
});

describe('openai SDK responses -> serve /v1/responses -> sim', () => {
  for (const model of ['fast', 'claude', 'gemini']) {
    test(`${model}: responses.create`, async () => {
      const response = await client.responses.create({
        model, instructions: 'Be brief.', input: 'Hello', max_output_tokens: 6, store: false,
        metadata: { test: 'sdk' }, user: 'sdk-test',
      });
      assert.equal(response.object, 'response');
      assert.match(response.id, /^resp_/);
      assert.equal(response.status, 'incomplete');
      assert.equal(response.incomplete_details.reason, 'max_output_tokens');
      assert.equal(response.output[0].type, 'message');
      assert.equal(response.output[0].role, 'assistant');
      assert.ok(response.output_text.length > 0);
      assert.equal(response.usage.output_tokens, 6);
      assert.ok(response.usage.input_tokens > 0);
      assert.equal(response.usage.total_tokens, response.usage.input_tokens + 6);
    });

    test(`${model}: a streamed text answer`, async () => {
      const stream = await client.responses.create({
        model, input: [{ role: 'user', content: 'Stream' }], max_output_tokens: 9, stream: true,
      });
      const types = [];
      let text = '';
      let final;
      for await (const event of stream) {
        types.push(event.type);
        assert.equal(event.sequence_number, types.length - 1);
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.incomplete' || event.type === 'response.completed') final = event.response;
      }
      assert.deepEqual(types.slice(0, 4), [
        'response.created', 'response.in_progress', 'response.output_item.added',
        'response.content_part.added',
      ]);
      assert.equal(types[4], 'response.output_text.delta');
      assert.deepEqual(types.slice(-4), [
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
        'response.incomplete',
      ]);
      assert.ok(text.length > 0);
      assert.equal(final.output[0].content[0].text, text);
      assert.equal(final.usage.output_tokens, 9);
    });

    test(`${model}: responses.stream accumulates a function call`, async () => {
      const stream = client.responses.stream({
        model, input: 'Weather in Oslo?', max_output_tokens: 64, ...forceWeather,
      });
      let argumentDeltas = 0;
      stream.on('response.function_call_arguments.delta', () => { argumentDeltas += 1; });
      const final = await stream.finalResponse();
      const call = final.output.find((item) => item.type === 'function_call');
      assert.ok(call, JSON.stringify(final.output));
      assert.equal(call.name, 'get_weather');
      assert.ok(call.call_id.length > 0);
      assert.ok(argumentDeltas > 0);
      checkWeatherArguments(assert, JSON.parse(call.arguments));
    });

    test(`${model}: a function call and its output, whole`, async () => {
      const first = await client.responses.create({
        model, input: 'Weather in Oslo?', max_output_tokens: 64, ...forceWeather,
      });
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call, JSON.stringify(first.output));
      checkWeatherArguments(assert, JSON.parse(call.arguments));
      const second = await client.responses.create({
        model, max_output_tokens: 8, tools: [weather],
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: '{"celsius": 4}' },
        ],
      });
      assert.equal(second.output[0].type, 'message');
      assert.ok(second.output_text.length > 0);
    });
  }

  test('previous_response_id is a 400 naming it', async () => {
    await assert.rejects(
      client.responses.create({ model: 'fast', input: 'Hi', previous_response_id: 'resp_1' }),
      (err) => err instanceof OpenAI.BadRequestError && /previous_response_id/.test(err.message),
    );
  });

  test('reasoning on an Anthropic upstream is a 400 naming reasoning.effort', async () => {
    await assert.rejects(
      client.responses.create({ model: 'claude', input: 'Hi', reasoning: { effort: 'high' } }),
      (err) => err instanceof OpenAI.BadRequestError && /reasoning\.effort/.test(err.message),
    );
  });

  test('an unknown model is a 404', async () => {
    await assert.rejects(
      client.responses.create({ model: 'nope', input: 'Hi' }),
      (err) => err instanceof OpenAI.NotFoundError && /nope/.test(err.message),
    );
  });
});
