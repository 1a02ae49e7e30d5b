import type { CatalogConfig } from '../config/config-schema.js';

/** The built-in demo provider's slug; `providers.switchyard.enabled: false` switches it off. */
export const DEMO_PROVIDER_SLUG = 'switchyard';

export const demoProvider: CatalogConfig['providers'][number] = {
  slug: DEMO_PROVIDER_SLUG,
  name: 'Switchyard Demo',
  adapter: 'DemoAdapter',
  base_url: 'http://127.0.0.1/builtin-demo',
  training: false,
  retains_prompts: false,
};

const demoModel = (
  id: string,
  name: string,
  description: string,
  extra: Partial<CatalogConfig['models'][number]> = {},
): CatalogConfig['models'][number] => ({
  id: `${DEMO_PROVIDER_SLUG}/${id}`,
  name: `Switchyard Demo: ${name}`,
  provider: DEMO_PROVIDER_SLUG,
  provider_model_id: id,
  context_length: 32_768,
  max_completion_tokens: 4096,
  pricing: { prompt: '0', completion: '0' },
  description,
  created: 1_767_225_600,
  supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'tools', 'tool_choice', 'seed'],
  ...extra,
});

/**
 * The demo provider's models: zero-priced, answered in-process (src/gateway/providers/demo), so a
 * fresh install serves a real request with no credentials and tests can script failures.
 */
export const demoModels: CatalogConfig['models'] = [
  demoModel('echo', 'Echo', 'Answers with the last user message, word for word.'),
  demoModel('scripted', 'Scripted', 'Streams a fixed sentence; calls the first tool when tools are given.'),
  demoModel('fail-429', 'Rate limited', 'Always fails with HTTP 429 and Retry-After: 1 before any output.'),
  demoModel('fail-500', 'Server error', 'Always fails with HTTP 500 before any output.'),
  demoModel('slow-first-token', 'Slow first token', 'Sends nothing until the first-token timeout passes.'),
  demoModel('cut-mid-stream', 'Cut mid-stream', 'Sends two words, then the connection breaks.'),
  demoModel(
    'embed',
    'Embeddings',
    'Deterministic unit-length embedding vectors derived from the input text.',
    {
      output_modalities: ['embeddings'],
      supported_parameters: [],
      max_completion_tokens: undefined,
    },
  ),
];
