import { type Static, Type } from 'typebox';
import { stringEnum } from '../../platform/schema-types.js';
import type { DestinationType } from '../destination-type.js';
import { CustomHeadersSchema, headerProblems, urlProblems } from './exporter-support.js';
import { loadOtlpSpans, type OtlpTarget, sendChunks, testOtlpConnection } from './otlp-delivery.js';

const webhookConfigSchema = Type.Object(
  {
    url: Type.String({ format: 'uri' }),
    method: Type.Optional(stringEnum(['POST', 'PUT'] as const)),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type WebhookConfig = Static<typeof webhookConfigSchema>;

/**
 * Events per `send`. The requests of a batch are sequential and share the worker's send limit (half
 * a lease, 30 s by default): a receiver slower than 1.5 s per request sees batches cut short, and the
 * events not yet sent then go in the next batch (the one in flight is retried).
 */
export const WEBHOOK_BATCH = 20;

/**
 * Any HTTP endpoint (reference §3.1 `webhook`): OTLP JSON, one generation per request, with an
 * `Idempotency-Key` stable across retries so the receiver can drop a redelivery (the reference tells
 * webhook users to build their own retry logic; this gives them the key to do it safely).
 *
 * The worker hands it up to WEBHOOK_BATCH events at a time: they go out one request each, in order,
 * and the delivered ones are settled together (one outbox statement rather than one per event). A
 * failed request stops the batch (`stopped`): its event takes the failure, status and `Retry-After`
 * included; the events after it keep their attempt and wait with a paused destination, or are
 * sent next when only that event was at fault (a refused payload).
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
  maxBatch: WEBHOOK_BATCH,
  testOnSave: true,
  send: async (items, context) => {
    const { encodeOtlpTraces } = await loadOtlpSpans();
    const requests: Array<Parameters<typeof sendChunks>[0][number]> = [];
    for (const [index, item] of items.entries())
      requests.push({
        indexes: [index],
        body: encodeOtlpTraces([item.event]),
        headers: { 'Idempotency-Key': item.idempotencyKey },
      });
    return sendChunks(requests, context, target(context.config));
  },
  testConnection: (context) => testOtlpConnection(context, target(context.config)),
};

const target = (config: WebhookConfig): OtlpTarget => ({
  url: config.url,
  method: config.method,
  custom: config.headers,
});
