import { type Static, Type } from 'typebox';
import type { BroadcastEvent, BroadcastMessage } from '../broadcast-event.js';
import type { SpanAttributeWriter } from '../otlp-spans.js';
import { CustomHeadersSchema, urlProblems } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

const arizeConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    spaceKey: Type.String({ minLength: 1 }),
    /** The Arize AX tracing project name (the reference keeps Arize's older "model id" label). */
    modelId: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type ArizeConfig = Static<typeof arizeConfigSchema>;

const DEFAULT_BASE_URL = 'https://otlp.arize.com';

/**
 * Arize AX over OTLP/HTTP JSON: `POST {baseUrl}/v1/traces` authenticated by the `space_id` and
 * `api_key` headers (arize-otel's HTTP exporter), the project named by the resource attributes
 * `openinference.project.name` and the older `model_id`, and each span described with the
 * OpenInference LLM conventions Arize reads (https://github.com/Arize-ai/openinference, spec/).
 */
export const arizeDestination = otlpDestination<ArizeConfig>({
  type: 'arize',
  configSchema: arizeConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  secretFields: ['apiKey'],
  // Sent as the `space_id` header.
  headerFields: ['spaceKey'],
  validate: (config) => urlProblems({ baseUrl: config.baseUrl }),
  url: ({ config }) => `${(config.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '')}/v1/traces`,
  headers: (config) => ({ space_id: config.spaceKey, api_key: config.apiKey }),
  delivery: (config) => ({
    resourceAttributes: { 'openinference.project.name': config.modelId, model_id: config.modelId },
    spanAttributes: writeOpenInference,
  }),
});

/** OpenInference attributes: span kind, model, token counts, cost, parameters, flattened messages. */
export function writeOpenInference(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  const { usage } = event;
  attributes.string('openinference.span.kind', event.operation === 'embeddings' ? 'EMBEDDING' : 'LLM');
  attributes.string(
    event.operation === 'embeddings' ? 'embedding.model_name' : 'llm.model_name',
    event.model ?? event.requested_model,
  );
  attributes.string('llm.provider', event.provider);
  attributes.string('llm.system', event.provider);
  attributes.integer('llm.token_count.prompt', usage.prompt_tokens);
  attributes.integer('llm.token_count.completion', usage.completion_tokens);
  attributes.integer('llm.token_count.total', usage.total_tokens);
  attributes.integer('llm.token_count.prompt_details.cache_read', usage.cached_tokens);
  attributes.integer('llm.token_count.prompt_details.cache_write', usage.cache_write_tokens);
  attributes.integer('llm.token_count.completion_details.reasoning', usage.reasoning_tokens);
  attributes.double('llm.cost.total', event.total_cost);
  if (event.cost) {
    attributes.double('llm.cost.prompt', event.cost.input_usd);
    attributes.double('llm.cost.completion', event.cost.output_usd);
  }
  attributes.string('llm.invocation_parameters', JSON.stringify(event.parameters));
  if (Object.keys(event.trace.metadata).length > 0)
    attributes.string('metadata', JSON.stringify(event.trace.metadata));
  if (event.input) writeMessages('llm.input_messages', event.input, attributes);
  if (event.output) writeMessages('llm.output_messages', event.output, attributes);
}

function writeMessages(
  prefix: string,
  messages: readonly BroadcastMessage[],
  attributes: SpanAttributeWriter,
): void {
  for (const [index, message] of messages.entries()) {
    const key = `${prefix}.${index}.message`;
    attributes.string(`${key}.role`, message.role);
    attributes.string(`${key}.content`, message.content);
    attributes.string(`${key}.tool_call_id`, message.tool_call_id);
    for (const [callIndex, call] of (message.tool_calls ?? []).entries()) {
      const callKey = `${key}.tool_calls.${callIndex}.tool_call`;
      attributes.string(`${callKey}.id`, call.id);
      attributes.string(`${callKey}.function.name`, call.name);
      attributes.string(`${callKey}.function.arguments`, call.arguments);
    }
  }
}
