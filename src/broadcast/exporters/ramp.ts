import { type Static, Type } from 'typebox';
import { CustomHeadersSchema, urlProblems } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

const rampConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type RampConfig = Static<typeof rampConfigSchema>;

const DEFAULT_BASE_URL = 'https://api.ramp.com/developer/v1/ai-usage/openrouter';

/**
 * Ramp's AI-usage ingestion: the OTLP JSON export posted to the base URL itself (Ramp documents
 * `POST /developer/v1/ai-usage/openrouter` as the endpoint taking OTLP trace payloads; no
 * `/v1/traces` suffix), with the integration's API key as a bearer token. Ramp reads cost from
 * `gen_ai.usage.total_cost`, added here next to the common `gen_ai.usage.cost`.
 */
export const rampDestination = otlpDestination<RampConfig>({
  type: 'ramp',
  configSchema: rampConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  secretFields: ['apiKey'],
  validate: (config) => urlProblems({ baseUrl: config.baseUrl }, { verbatim: true }),
  url: ({ config }) => config.baseUrl ?? DEFAULT_BASE_URL,
  headers: (config) => ({ Authorization: `Bearer ${config.apiKey}` }),
  delivery: () => ({
    spanAttributes: (event, attributes) => attributes.double('gen_ai.usage.total_cost', event.total_cost),
  }),
});
