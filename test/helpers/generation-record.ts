import { randomBytes } from 'node:crypto';
import type { GenerationRecordInput } from '../../src/billing/generation-log.js';

export const SAMPLE_KEY_HASH = 'a'.repeat(64);
export const SAMPLE_WORKSPACE = '00000000-0000-4000-8000-000000000001';

/** A completed, billed chat generation record as the pipeline hands it to the log; `overrides` win. */
export function sampleGenerationRecord(
  overrides: Partial<GenerationRecordInput> = {},
): GenerationRecordInput {
  return {
    id: `gen-${Date.now()}-${randomBytes(8).toString('hex')}`,
    created_at: '2025-03-10T12:00:00.000Z',
    key_hash: SAMPLE_KEY_HASH,
    workspace_id: SAMPLE_WORKSPACE,
    api_type: 'chat-completions',
    requested_model: 'openai/gpt-4o',
    model: 'openai/gpt-4o',
    provider_slug: 'openai',
    provider_name: 'OpenAI',
    endpoint_id: 'openai/gpt-4o:openai',
    upstream_id: 'chatcmpl-123',
    streamed: true,
    cancelled: false,
    is_byok: false,
    status: 'completed',
    http_status: 200,
    error_type: null,
    error_message: null,
    finish_reason: 'stop',
    native_finish_reason: 'stop',
    tokens_prompt: 10,
    tokens_completion: 25,
    tokens_cached: 3,
    tokens_cache_write: 0,
    tokens_reasoning: 5,
    cost_nanos: 1_234_567,
    input_cost_nanos: 234_567,
    output_cost_nanos: 1_000_000,
    latency_ms: 1250,
    first_token_ms: 300,
    generation_time_ms: 1200,
    user_id: 'user-123',
    session_id: 'session-1',
    metadata: { team: 'search' },
    trace: { trace_id: 't-1', span_name: 'answer' },
    app_referer: 'https://app.example',
    app_title: 'Example',
    attempts: [
      {
        provider: 'openai',
        model: 'openai/gpt-4o',
        endpoint_id: 'e1',
        status: 200,
        error_type: null,
        latency_ms: 1200,
      },
    ],
    ...overrides,
  };
}
