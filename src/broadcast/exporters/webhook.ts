import { type Static, Type } from 'typebox';
import type { DestinationType } from '../destination-type.js';
import { CustomHeadersSchema, headerProblems, urlProblems } from './exporter-support.js';
import { loadOtlpSpans, type OtlpTarget, sendChunks, testOtlpConnection } from './otlp-delivery.js';

const webhookConfigSchema = Type.Object(
  {
    url: Type.String({ format: 'uri' }),
    method: Type.Optional(Type.Union([Type.Literal('POST'), Type.Literal('PUT')])),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type WebhookConfig = Static<typeof webhookConfigSchema>;

/**
 * Any HTTP endpoint (reference §3.1 `webhook`): OTLP JSON, one generation per request, with an
 * `Idempotency-Key` stable across retries so the receiver can drop a redelivery (the reference tells
 * webhook users to build their own retry logic; this gives them the key to do it safely).
 *
 * One event per batch, too: a send that stops at a failed request reports only which items failed,
 * without the failure's status or `Retry-After`, so the worker could neither pause the destination
 * nor keep the unsent events' attempts (see docs/performance.md, session 6).
 */
export const webhookDestination: DestinationType<WebhookConfig> = {
  type: 'webhook',
  configSchema: webhookConfigSchema,
  defaults: { method: 'POST' },
  secretFields: [],
  validate: (config) => [
    ...urlProblems({ url: config.url }, { verbatim: true }),
    ...headerProblems(config.headers),
  ],
  urls: (config) => [config.url],
  maxBatch: 1,
  testOnSave: true,
  send: async (items, context) => {
    const { encodeOtlpTraces } = await loadOtlpSpans();
    return sendChunks(
      items.map((item, index) => ({
        indexes: [index],
        body: encodeOtlpTraces([item.event]),
        headers: { 'Idempotency-Key': item.idempotencyKey },
      })),
      context,
      target(context.config),
    );
  },
  testConnection: (context) => testOtlpConnection(context, target(context.config)),
};

const target = (config: WebhookConfig): OtlpTarget => ({
  url: config.url,
  method: config.method,
  custom: config.headers,
});
