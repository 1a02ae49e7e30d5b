import { type Static, Type } from 'typebox';
import { CustomHeadersSchema, urlProblems } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

const otelCollectorConfigSchema = Type.Object(
  {
    endpoint: Type.String({
      format: 'uri',
      description: 'OTLP/HTTP traces URL, e.g. https://collector:4318/v1/traces',
    }),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type OtelCollectorConfig = Static<typeof otelCollectorConfigSchema>;

/**
 * The generic OTLP/HTTP JSON destination (reference §3.1 `otel-collector`): the OpenTelemetry
 * Collector's `otlphttp` receiver or any service speaking it, authenticated by custom headers
 * (e.g. Axiom's `Authorization` and `X-Axiom-Dataset`). The endpoint is called as given.
 */
export const otelCollectorDestination = otlpDestination<OtelCollectorConfig>({
  type: 'otel-collector',
  configSchema: otelCollectorConfigSchema,
  defaults: {},
  secretFields: [],
  validate: (config) => urlProblems({ endpoint: config.endpoint }, { verbatim: true }),
  url: ({ config }) => config.endpoint,
  testOnSave: true,
});
