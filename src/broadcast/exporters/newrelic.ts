import { type Static, Type } from 'typebox';
import { stringEnum } from '../../platform/schema-types.js';
import { CustomHeadersSchema } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

const newrelicConfigSchema = Type.Object(
  {
    licenseKey: Type.String({ minLength: 1 }),
    region: Type.Optional(stringEnum(['us', 'eu'] as const)),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type NewrelicConfig = Static<typeof newrelicConfigSchema>;

/** New Relic's native OTLP endpoints (https://docs.newrelic.com/docs/opentelemetry/best-practices/opentelemetry-otlp/). */
const REGION_ORIGINS = { us: 'https://otlp.nr-data.net', eu: 'https://otlp.eu01.nr-data.net' } as const;
const TRACES_PATH = '/v1/traces';

/**
 * New Relic's documented ingest limits: 1 MB per request, attribute values up to 4095 characters
 * (longer ones would be cut by New Relic anyway; cutting here keeps batches under the size limit).
 */
const MAX_REQUEST_BYTES = 1_000_000;
const MAX_ATTRIBUTE_LENGTH = 4095;

/**
 * New Relic over OTLP/HTTP JSON, authenticated by the `api-key` header carrying an ingest license
 * key. The config names no URL: the region's host is used, or the operator's origin override for
 * this type (a proxy, a test receiver).
 */
export const newrelicDestination = otlpDestination<NewrelicConfig>({
  type: 'newrelic',
  configSchema: newrelicConfigSchema,
  defaults: { region: 'us' },
  secretFields: ['licenseKey'],
  url: ({ config, originOverride }) =>
    `${originOverride?.replace(/\/+$/, '') ?? REGION_ORIGINS[config.region ?? 'us']}${TRACES_PATH}`,
  headers: (config) => ({ 'api-key': config.licenseKey }),
  delivery: () => ({ maxRequestBytes: MAX_REQUEST_BYTES, maxAttributeLength: MAX_ATTRIBUTE_LENGTH }),
});
