// The official Google GenAI SDK (`@google/genai`) against `tokenradar serve`'s Gemini door
// (/v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse, /v1beta/models),
// which relays to `tokenradar sim`: model `fast` is the sim's OpenAI dialect, `claude` its
// Anthropic dialect, `gemini` its Gemini dialect. The SDK must not tell the door from Google's
// API: whole answers, streams, function calls and their responses, typed errors, the models.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { ApiError, GoogleGenAI } from '@google/genai';

import { geminiWeatherTool as weather } from './lib/fixtures.mjs';
import { startServe, startSim } from './lib/servers.mjs';

let ai;
before(async () => {
  const sim = await startSim('instant');
  const serve = await startServe(sim.url);
  ai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: serve.url, timeout: 10_000 } });
});

const forceWeather = {
  tools: [{ functionDeclarations: [weather] }],
  toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
};

function checkWeatherCall(call) {
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof call.args.city, 'string');
  assert.ok(Number.isInteger(call.args.days) && call.args.days >= 1, JSON.stringify(call.args));
}

describe('@google/genai -> serve /v1beta/models -> sim', () => {
  for (const model of ['fast', 'claude', 'gemini']) {
    test(`${model}: models.generateContent`, async () => {
      const response = await ai.models.generateContent({
        model, contents: 'Hello', config: { maxOutputTokens: 6, systemInstruction: 'Be brief.' },
      });
      assert.ok(response.text.length > 0);
      assert.equal(response.candidates[0].finishReason, 'MAX_TOKENS');
      assert.equal(response.usageMetadata.candidatesTokenCount, 6);
      assert.ok(response.usageMetadata.promptTokenCount > 0);
    });

    test(`${model}: models.generateContentStream text`, async () => {
      const stream = await ai.models.generateContentStream({
        model, contents: 'Stream', config: { maxOutputTokens: 9 },
      });
      let text = '';
      let chunks = 0;
      let last;
      for await (const chunk of stream) {
        text += chunk.text ?? '';
        chunks += 1;
        last = chunk;
      }
      assert.ok(chunks > 2, `${chunks} chunks`);
      assert.ok(text.length > 0);
      assert.equal(last.candidates[0].finishReason, 'MAX_TOKENS');
      assert.equal(last.usageMetadata.candidatesTokenCount, 9);
    });

    test(`${model}: a streamed function call`, async () => {
      const stream = await ai.models.generateContentStream({
        model, contents: 'Weather in Oslo?', config: { maxOutputTokens: 16, ...forceWeather },
      });
      const calls = [];
      let finish;
      for await (const chunk of stream) {
        calls.push(...(chunk.functionCalls ?? []));
        finish = chunk.candidates?.[0]?.finishReason ?? finish;
      }
      assert.equal(calls.length, 1, JSON.stringify(calls));
      checkWeatherCall(calls[0]);
      assert.equal(finish, 'STOP');
    });

    test(`${model}: a function call, its response sent back, then an answer`, async () => {
      const first = await ai.models.generateContent({
        model, contents: 'Weather in Oslo?', config: { maxOutputTokens: 16, ...forceWeather },
      });
      assert.equal(first.functionCalls?.length, 1, JSON.stringify(first.candidates));
      const call = first.functionCalls[0];
      checkWeatherCall(call);
      // As Google's docs show it: the model's turn as it came, then a functionResponse that
      // names the function and carries no id.
      const answer = await ai.models.generateContent({
        model,
        contents: [
          { role: 'user', parts: [{ text: 'Weather in Oslo?' }] },
          first.candidates[0].content,
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Sunny, 21 C' } } }] },
        ],
        config: { maxOutputTokens: 5, tools: forceWeather.tools },
      });
      assert.ok(answer.text.length > 0, JSON.stringify(answer.candidates));
      assert.equal(answer.usageMetadata.candidatesTokenCount, 5);
    });
  }

  test('a functionResponse that answers no call is a 400 naming it', async () => {
    await assert.rejects(
      ai.models.generateContent({
        model: 'fast',
        contents: [
          { role: 'user', parts: [{ text: 'Weather?' }] },
          { role: 'model', parts: [{ functionCall: { name: 'get_time', args: {} } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'x' } } }] },
        ],
      }),
      (err) => err instanceof ApiError && err.status === 400 && /get_weather/.test(err.message),
    );
  });

  test('an unknown model is a 404 ApiError', async () => {
    await assert.rejects(
      ai.models.generateContent({ model: 'nope', contents: 'x' }),
      (err) => err instanceof ApiError && err.status === 404 && /nope/.test(err.message),
    );
  });

  test('a malformed request is a 400 ApiError naming the field', async () => {
    await assert.rejects(
      ai.models.generateContent({ model: 'fast', contents: [{ role: 'robot', parts: [{ text: 'x' }] }] }),
      (err) => err instanceof ApiError && err.status === 400 && /role/.test(err.message),
    );
  });

  test('models.list and models.get', async () => {
    const names = [];
    for await (const m of await ai.models.list()) names.push(m.name);
    for (const name of ['models/fast', 'models/claude', 'models/gemini']) {
      assert.ok(names.includes(name), names.join(','));
    }
    const model = await ai.models.get({ model: 'gemini' });
    assert.equal(model.name, 'models/gemini');
    assert.ok(model.supportedActions.includes('generateContent'), JSON.stringify(model));
  });
});
