/** Rows of the catalogue snapshot files, as far as the gateway reads them (catalog-data/SNAPSHOT.md). */

export interface SnapshotModel {
  id: string;
  canonical_slug: string;
  hugging_face_id: string | null;
  name: string;
  created: number;
  description: string;
  context_length: number;
  architecture: {
    modality: string;
    input_modalities: string[];
    output_modalities: string[];
    tokenizer: string;
    instruct_type: string | null;
  };
  pricing: Record<string, unknown> & { prompt: string; completion: string };
  top_provider: {
    context_length: number | null;
    max_completion_tokens: number | null;
    is_moderated: boolean;
  };
  per_request_limits: Record<string, unknown> | null;
  supported_parameters: string[];
  default_parameters: Record<string, unknown> | null;
  supported_voices: string[] | null;
  knowledge_cutoff: string | null;
  expiration_date: string | null;
  links: { details: string };
  benchmarks?: {
    design_arena?: Array<{ elo?: number | null }>;
    artificial_analysis?: {
      intelligence_index?: number | null;
      coding_index?: number | null;
      agentic_index?: number | null;
    };
  };
}

export interface EndpointStats {
  p50_latency: number;
  p75_latency: number;
  p90_latency: number;
  p99_latency: number;
  p50_throughput: number;
  p75_throughput: number;
  p90_throughput: number;
  p99_throughput: number;
  request_count: number;
}

export interface SnapshotEndpoint {
  id: string;
  model: string;
  model_permaslug: string;
  model_name: string;
  provider_slug: string;
  provider_name: string;
  provider_model_id: string;
  adapter: string;
  variant: string;
  context_length: number;
  max_prompt_tokens: number | null;
  max_completion_tokens: number | null;
  quantization: string | null;
  pricing: Record<string, unknown> & { prompt: string; completion: string };
  supported_parameters: string[];
  data_policy: { training: boolean; retains_prompts: boolean; retention_days: number | null };
  status: number;
  provider_region: string | null;
  stats: EndpointStats | null;
  is_free: boolean;
  can_abort: boolean;
  is_byok_only: boolean;
}

export interface SnapshotProvider {
  slug: string;
  name: string;
  adapter: string;
  base_url: string;
  headquarters: string | null;
  data_policy: { training: boolean; retains_prompts: boolean };
  privacy_policy_url: string | null;
  terms_of_service_url: string | null;
  status_page_url: string | null;
}

export interface SnapshotUsageRow {
  date: string;
  model_permaslug: string;
  variant: string;
  count: number;
  total_prompt_tokens: number;
  total_completion_tokens: number;
  total_tool_calls: number;
  requests_with_tool_call_errors: number;
}

export interface Snapshot {
  models: SnapshotModel[];
  endpoints: SnapshotEndpoint[];
  providers: SnapshotProvider[];
  usage: SnapshotUsageRow[];
}
