import { type Static, Type } from 'typebox';
import { CustomHeadersSchema, urlProblems } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

const grafanaConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    instanceId: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type GrafanaConfig = Static<typeof grafanaConfigSchema>;

const DEFAULT_BASE_URL = 'https://otlp-gateway-prod-us-west-0.grafana.net';

/**
 * Grafana Cloud Traces through the stack's OTLP gateway: `POST {baseUrl}/otlp/v1/traces` with HTTP
 * Basic auth, the numeric instance id as user and a `traces:write` token as password
 * (https://grafana.com/docs/grafana-cloud/send-data/traces/set-up/verify-ingestion/).
 */
export const grafanaDestination = otlpDestination<GrafanaConfig>({
  type: 'grafana',
  configSchema: grafanaConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  secretFields: ['apiKey'],
  validate: (config) => [
    ...urlProblems({ baseUrl: config.baseUrl }),
    ...(/^\d+$/.test(config.instanceId)
      ? []
      : [{ field: 'instanceId', message: 'must be the numeric Grafana Cloud instance id' }]),
  ],
  url: ({ config }) => `${(config.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '')}/otlp/v1/traces`,
  headers: (config) => ({
    Authorization: `Basic ${Buffer.from(`${config.instanceId}:${config.apiKey}`).toString('base64')}`,
  }),
});
