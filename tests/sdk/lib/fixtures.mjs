// Requests shared by the SDK tests.

export const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
      },
      required: ['city', 'unit', 'days'],
      additionalProperties: false,
    },
    strict: true,
  },
};

export const timeTool = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Current time in a time zone',
    parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] },
  },
};

// get_weather as an Anthropic tool (input_schema).
export const anthropicWeatherTool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
    required: ['city', 'days'],
  },
};

// The same as a Gemini function declaration (JSON Schema in parametersJsonSchema).
export const geminiWeatherTool = {
  name: anthropicWeatherTool.name,
  description: anthropicWeatherTool.description,
  parametersJsonSchema: anthropicWeatherTool.input_schema,
};

export const user = (content) => [{ role: 'user', content }];

// Arguments a caller of get_weather can rely on: the schema's required properties, typed.
export function checkWeatherArguments(assert, args) {
  assert.equal(typeof args.city, 'string');
  assert.ok(args.city.length > 0);
  assert.ok(['celsius', 'fahrenheit'].includes(args.unit), args.unit);
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, String(args.days));
}
