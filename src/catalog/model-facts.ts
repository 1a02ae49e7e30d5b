import { knownPrice, perMillion, scaledPrice } from '../billing/decimal-price.js';
import type { SnapshotEndpoint, SnapshotModel, SnapshotUsageRow } from './snapshot-types.js';

export const categories = [
  'programming',
  'roleplay',
  'marketing',
  'marketing/seo',
  'technology',
  'science',
  'translation',
  'legal',
  'finance',
  'health',
  'trivia',
  'academia',
] as const;
export type Category = (typeof categories)[number];

/**
 * The snapshot has no categories, so they are derived from each model's name and description by
 * these keyword rules (docs/catalog.md). Curated rules beat nothing; they are easy to audit and test.
 */
const categoryRules: Record<Category, RegExp> = {
  programming: /\b(code|coding|coder|programming|software|developer|debugging)\b/i,
  roleplay: /\b(role-?play(ing)?|characters?|storytelling|fiction|creative writing)\b/i,
  marketing: /\b(marketing|copywriting|advertising|brand)\b/i,
  'marketing/seo': /\b(seo|search engine)\b/i,
  technology: /\b(technical|technology|engineering|enterprise)\b/i,
  science: /\b(science|scientific|math(ematics|ematical)?|physics|chemistry|biology|stem)\b/i,
  translation: /\b(translation|translate|multilingual|languages)\b/i,
  legal: /\b(legal|law|contracts?|compliance)\b/i,
  finance: /\b(finance|financial|accounting|trading|banking)\b/i,
  health: /\b(health|healthcare|medical|clinical|biomedical)\b/i,
  trivia: /\b(knowledge|trivia|facts?|factual|general-purpose)\b/i,
  academia: /\b(academic|research|scholarly|education|educational|students?)\b/i,
};

/**
 * Truncated descriptions rarely name a business domain, so domain categories also take the strong
 * generalists (Artificial Analysis intelligence index ≥ 40), which lead such rankings in practice;
 * programming also takes strong coders (coding index ≥ 40). Roleplay and translation stay keyword-only.
 */
export const GENERALIST_INDEX = 40;
const generalistCategories: ReadonlySet<Category> = new Set([
  'marketing',
  'marketing/seo',
  'technology',
  'science',
  'legal',
  'finance',
  'health',
  'trivia',
  'academia',
]);

function categoriesOf(text: string, intelligence: number | null, coding: number | null): Set<Category> {
  return new Set(
    categories.filter(
      (category) =>
        categoryRules[category].test(text) ||
        (generalistCategories.has(category) && intelligence !== null && intelligence >= GENERALIST_INDEX) ||
        (category === 'programming' && coding !== null && coding >= GENERALIST_INDEX),
    ),
  );
}

const euRegionNames = new Set([
  'eu',
  'europe',
  'swedencentral',
  'francecentral',
  'francesouth',
  'germanywestcentral',
  'germanynorth',
  'northeurope',
  'westeurope',
  'italynorth',
  'polandcentral',
  'spaincentral',
  'norwayeast',
  'norwaywest',
]);

export function isEuRegion(region: string | null): boolean {
  if (!region) return false;
  const name = region.toLowerCase();
  return euRegionNames.has(name) || name.startsWith('eu-') || name.startsWith('europe-');
}

export const isZeroDataRetention = (endpoint: SnapshotEndpoint): boolean =>
  endpoint.data_policy.training === false && endpoint.data_policy.retains_prompts === false;

/** Everything the filters and sorts read about one model, computed once when the catalogue loads. */
export interface ModelFacts {
  author: string;
  variant: string;
  created: number;
  contextLength: number;
  tokenizer: string;
  searchText: string;
  supportedParameters: ReadonlySet<string>;
  inputModalities: ReadonlySet<string>;
  outputModalities: ReadonlySet<string>;
  promptPerMillion: number | null;
  completionPerMillion: number | null;
  /** prompt + completion per token, exact in 10^-18 USD: twice the average price, so the same order. */
  priceSum: bigint | null;
  providers: ReadonlySet<string>;
  zdr: boolean;
  eu: boolean;
  distillable: boolean;
  categories: ReadonlySet<Category>;
  popularity: number | null;
  weeklyTokens: number | null;
  toolSuccessRate: number | null;
  throughput: number | null;
  latency: number | null;
  intelligenceIndex: number | null;
  codingIndex: number | null;
  agenticIndex: number | null;
  designArenaElo: number | null;
}

export const modelVariant = (id: string): string =>
  id.includes(':') ? id.slice(id.indexOf(':') + 1) : 'standard';

export const usageKey = (permaslug: string, variant: string): string => `${permaslug}\u0000${variant}`;

export interface UsageSummary {
  popularity: number;
  weeklyTokens: number | null;
  toolCalls: number;
  toolCallErrors: number;
}

/** Sums usage rows per (permaslug, variant); "weekly" is the 7 days ending at the newest date present. */
export function summarizeUsage(rows: SnapshotUsageRow[]): Map<string, UsageSummary> {
  const latest = rows.reduce((max, row) => (row.date.slice(0, 10) > max ? row.date.slice(0, 10) : max), '');
  const weekStart = latest
    ? new Date(Date.parse(`${latest}T00:00:00Z`) - 6 * 86_400_000).toISOString().slice(0, 10)
    : '';
  const summaries = new Map<string, UsageSummary>();
  for (const row of rows) {
    const key = usageKey(row.model_permaslug, row.variant);
    const summary = summaries.get(key) ?? {
      popularity: 0,
      weeklyTokens: null,
      toolCalls: 0,
      toolCallErrors: 0,
    };
    summary.popularity += row.count;
    summary.toolCalls += row.total_tool_calls ?? 0;
    summary.toolCallErrors += row.requests_with_tool_call_errors ?? 0;
    if (row.date.slice(0, 10) >= weekStart) {
      summary.weeklyTokens =
        (summary.weeklyTokens ?? 0) + (row.total_prompt_tokens ?? 0) + (row.total_completion_tokens ?? 0);
    }
    summaries.set(key, summary);
  }
  return summaries;
}

function extreme(values: Array<number | null | undefined>, pick: 'max' | 'min'): number | null {
  const present = values.filter(
    (value): value is number => typeof value === 'number' && Number.isFinite(value),
  );
  if (present.length === 0) return null;
  return pick === 'max' ? Math.max(...present) : Math.min(...present);
}

const sumOrNull = (a: bigint | null, b: bigint | null): bigint | null =>
  a === null || b === null ? null : a + b;

const numberOrNull = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

export function computeFacts(options: {
  model: SnapshotModel;
  endpoints: SnapshotEndpoint[];
  usage: UsageSummary | undefined;
}): ModelFacts {
  const { model, endpoints, usage } = options;
  const prompt = knownPrice(model.pricing.prompt);
  const completion = knownPrice(model.pricing.completion);
  const text = `${model.name} ${model.description ?? ''}`;
  const providers = new Set<string>();
  for (const endpoint of endpoints) {
    providers.add(endpoint.provider_name.toLowerCase());
    providers.add(endpoint.provider_slug.split('/')[0]!.toLowerCase());
  }
  const analysis = model.benchmarks?.artificial_analysis;
  return {
    author: model.id.split('/')[0]!.replace(/^~/, '').toLowerCase(),
    variant: modelVariant(model.id),
    created: model.created,
    contextLength: model.context_length,
    tokenizer: (model.architecture.tokenizer ?? '').toLowerCase(),
    searchText: `${model.name}\n${model.id}\n${model.canonical_slug}`.toLowerCase(),
    supportedParameters: new Set(model.supported_parameters),
    inputModalities: new Set(model.architecture.input_modalities),
    outputModalities: new Set(model.architecture.output_modalities),
    promptPerMillion: prompt === null ? null : perMillion(model.pricing.prompt),
    completionPerMillion: completion === null ? null : perMillion(model.pricing.completion),
    priceSum:
      prompt === null || completion === null
        ? null
        : sumOrNull(scaledPrice(model.pricing.prompt), scaledPrice(model.pricing.completion)),
    providers,
    zdr: endpoints.some(isZeroDataRetention),
    eu: endpoints.some((endpoint) => isEuRegion(endpoint.provider_region)),
    // The snapshot writes "" for models without published weights.
    distillable: typeof model.hugging_face_id === 'string' && model.hugging_face_id.trim() !== '',
    categories: categoriesOf(
      text,
      numberOrNull(analysis?.intelligence_index),
      numberOrNull(analysis?.coding_index),
    ),
    popularity: usage ? usage.popularity : null,
    weeklyTokens: usage ? usage.weeklyTokens : null,
    toolSuccessRate:
      usage && usage.toolCalls > 0 ? (usage.toolCalls - usage.toolCallErrors) / usage.toolCalls : null,
    throughput: extreme(
      endpoints.map((endpoint) => endpoint.stats?.p50_throughput),
      'max',
    ),
    latency: extreme(
      endpoints.map((endpoint) => endpoint.stats?.p50_latency),
      'min',
    ),
    intelligenceIndex: numberOrNull(analysis?.intelligence_index),
    codingIndex: numberOrNull(analysis?.coding_index),
    agenticIndex: numberOrNull(analysis?.agentic_index),
    designArenaElo: extreme(
      (model.benchmarks?.design_arena ?? []).map((entry) => entry.elo),
      'max',
    ),
  };
}
