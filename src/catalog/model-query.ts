import { type Static, Type } from 'typebox';
import { invalidRequest } from '../errors/app-error.js';
import type { CatalogModel } from './catalog.js';
import { type Category, categories, type ModelFacts } from './model-facts.js';

export const sorts = [
  'most-popular',
  'newest',
  'top-weekly',
  'pricing-low-to-high',
  'pricing-high-to-low',
  'context-high-to-low',
  'throughput-high-to-low',
  'latency-low-to-high',
  'intelligence-high-to-low',
  'coding-high-to-low',
  'agentic-high-to-low',
  'design-arena-elo-high-to-low',
] as const;
export type Sort = (typeof sorts)[number];

const outputModalities = ['text', 'image', 'audio', 'embeddings'];
const inputModalities = ['text', 'image', 'audio', 'file', 'video'];

/** A string enum as plain JSON Schema `enum`, so a refusal lists the allowed values. */
const literals = <T extends string>(values: readonly T[]) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values] });
const bound = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }));
const flag = Type.Optional(literals(['true', 'false']));
/** `use_rss` and `use_rss_chat_links`: supplied (`true`, `1`, empty) or not (`false`, `0`). */
const rssFlag = Type.Optional(literals(['true', 'false', '1', '0', '']));

/** GET /models query (spec 4.1). Unknown parameters are allowed and ignored. */
export const ModelsQuery = Type.Object({
  category: Type.Optional(literals(categories)),
  supported_parameters: Type.Optional(Type.String({ description: 'Comma-separated; all must be supported' })),
  output_modalities: Type.Optional(
    Type.String({
      description: 'Comma-separated from text, image, audio, embeddings, or "all"; default text',
    }),
  ),
  input_modalities: Type.Optional(
    Type.String({ description: 'Comma-separated from text, image, audio, file, video' }),
  ),
  sort: Type.Optional(literals(sorts)),
  use_rss: rssFlag,
  use_rss_chat_links: rssFlag,
  q: Type.Optional(Type.String({ description: 'Substring of the name, id or canonical slug' })),
  context: Type.Optional(Type.Integer({ exclusiveMinimum: 0, description: 'Minimum context length' })),
  min_price: bound('Minimum prompt price, USD per million tokens'),
  max_price: bound('Maximum prompt price, USD per million tokens'),
  min_output_price: bound('Minimum completion price, USD per million tokens'),
  max_output_price: bound('Maximum completion price, USD per million tokens'),
  arch: Type.Optional(Type.String({ description: 'Tokenizer family prefix, e.g. GPT, Claude, Llama' })),
  model_authors: Type.Optional(Type.String({ description: 'Comma-separated author slugs' })),
  providers: Type.Optional(Type.String({ description: 'Comma-separated provider names or slugs' })),
  distillable: flag,
  zdr: Type.Optional(literals(['true'])),
  region: Type.Optional(literals(['eu'])),
  min_age_days: Type.Optional(Type.Integer({ minimum: 0 })),
  max_age_days: Type.Optional(Type.Integer({ minimum: 0 })),
  min_intelligence_index: bound('Artificial Analysis intelligence index'),
  max_intelligence_index: bound('Artificial Analysis intelligence index'),
  min_coding_index: bound('Artificial Analysis coding index'),
  max_coding_index: bound('Artificial Analysis coding index'),
  min_agentic_index: bound('Artificial Analysis agentic index'),
  max_agentic_index: bound('Artificial Analysis agentic index'),
  min_tool_success_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  max_tool_success_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
});
export type ModelsQueryInput = Static<typeof ModelsQuery>;

export const CountQuery = Type.Object({ output_modalities: ModelsQuery.properties.output_modalities });

type Predicate = (facts: ModelFacts, model: CatalogModel) => boolean;

function commaList(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item.length > 0);
}

function checkedList(name: string, value: string | undefined, allowed: string[]): string[] {
  const items = commaList(value);
  const unknown = items.filter((item) => !allowed.includes(item));
  if (unknown.length > 0) {
    throw invalidRequest(
      `Invalid request parameters: querystring.${name} has unknown value "${unknown[0]}"; allowed: ${allowed.join(', ')}`,
    );
  }
  return items;
}

/**
 * `output_modalities` in one spelling: sorted, deduplicated, `all` alone, and `text` when absent or
 * empty (an empty value means the default, as if it were not given). Refuses unknown modalities.
 */
export function normalizedOutputModalities(value: string | undefined): string {
  const items = [...new Set(commaList(value))].sort();
  if (items.length === 0) return 'text';
  if (items.includes('all')) {
    if (items.length > 1) {
      throw invalidRequest(
        'Invalid request parameters: querystring.output_modalities cannot combine "all" with other values',
      );
    }
    return 'all';
  }
  return checkedList('output_modalities', items.join(','), outputModalities).join(',');
}

/** The `output_modalities` predicate, shared with /models/count; null when every model passes (`all`). */
export function outputModalityPredicate(value: string | undefined): Predicate | null {
  const normalized = normalizedOutputModalities(value);
  if (normalized === 'all') return null;
  const listed = normalized.split(',');
  return (facts) => listed.some((modality) => facts.outputModalities.has(modality));
}

function range(
  name: string,
  read: (facts: ModelFacts) => number | null,
  minimum: number | undefined,
  maximum: number | undefined,
): Predicate | null {
  if (minimum === undefined && maximum === undefined) return null;
  if (minimum !== undefined && maximum !== undefined && minimum > maximum) {
    throw invalidRequest(
      `Invalid request parameters: querystring.min_${name} must not exceed querystring.max_${name}`,
    );
  }
  return (facts) => {
    const value = read(facts);
    if (value === null) return false;
    return (minimum === undefined || value >= minimum) && (maximum === undefined || value <= maximum);
  };
}

/** Validates the query's cross-field rules and turns it into predicates; throws a 400 naming the parameter. */
export function compileFilters(query: ModelsQueryInput, now: () => Date): Predicate[] {
  const predicates: Array<Predicate | null> = [];
  if (query.category) {
    const category = query.category as Category;
    predicates.push((facts) => facts.categories.has(category));
  }
  const parameters = commaList(query.supported_parameters);
  if (parameters.length > 0)
    predicates.push((facts) => parameters.every((name) => facts.supportedParameters.has(name)));
  predicates.push(outputModalityPredicate(query.output_modalities));
  const inputs = checkedList('input_modalities', query.input_modalities, inputModalities);
  if (inputs.length > 0)
    predicates.push((facts) => inputs.every((modality) => facts.inputModalities.has(modality)));
  const text = query.q?.trim().toLowerCase();
  if (text) predicates.push((facts) => facts.searchText.includes(text));
  if (query.context !== undefined) {
    const context = query.context;
    predicates.push((facts) => facts.contextLength >= context);
  }
  predicates.push(range('price', (facts) => facts.promptPerMillion, query.min_price, query.max_price));
  predicates.push(
    range(
      'output_price',
      (facts) => facts.completionPerMillion,
      query.min_output_price,
      query.max_output_price,
    ),
  );
  const arch = query.arch?.trim().toLowerCase();
  if (arch) predicates.push((facts) => facts.tokenizer.startsWith(arch));
  const authors = commaList(query.model_authors);
  if (authors.length > 0) predicates.push((facts) => authors.includes(facts.author));
  const providers = commaList(query.providers);
  if (providers.length > 0)
    predicates.push((facts) => providers.some((provider) => facts.providers.has(provider)));
  if (query.distillable !== undefined) {
    const wanted = query.distillable === 'true';
    predicates.push((facts) => facts.distillable === wanted);
  }
  if (query.zdr === 'true') predicates.push((facts) => facts.zdr);
  if (query.region === 'eu') predicates.push((facts) => facts.eu);
  predicates.push(
    range(
      'age_days',
      (facts) => Math.floor((now().getTime() / 1000 - facts.created) / 86_400),
      query.min_age_days,
      query.max_age_days,
    ),
  );
  predicates.push(
    range(
      'intelligence_index',
      (facts) => facts.intelligenceIndex,
      query.min_intelligence_index,
      query.max_intelligence_index,
    ),
  );
  predicates.push(
    range('coding_index', (facts) => facts.codingIndex, query.min_coding_index, query.max_coding_index),
  );
  predicates.push(
    range('agentic_index', (facts) => facts.agenticIndex, query.min_agentic_index, query.max_agentic_index),
  );
  predicates.push(
    range(
      'tool_success_rate',
      (facts) => facts.toolSuccessRate,
      query.min_tool_success_rate,
      query.max_tool_success_rate,
    ),
  );
  return predicates.filter((predicate): predicate is Predicate => predicate !== null);
}

const sortKeys: Record<Sort, { key: (facts: ModelFacts) => number | bigint | null; descending: boolean }> = {
  'most-popular': { key: (facts) => facts.popularity, descending: true },
  newest: { key: (facts) => facts.created, descending: true },
  'top-weekly': { key: (facts) => facts.weeklyTokens, descending: true },
  'pricing-low-to-high': { key: (facts) => facts.priceSum, descending: false },
  'pricing-high-to-low': { key: (facts) => facts.priceSum, descending: true },
  'context-high-to-low': { key: (facts) => facts.contextLength, descending: true },
  'throughput-high-to-low': { key: (facts) => facts.throughput, descending: true },
  'latency-low-to-high': { key: (facts) => facts.latency, descending: false },
  'intelligence-high-to-low': { key: (facts) => facts.intelligenceIndex, descending: true },
  'coding-high-to-low': { key: (facts) => facts.codingIndex, descending: true },
  'agentic-high-to-low': { key: (facts) => facts.agenticIndex, descending: true },
  'design-arena-elo-high-to-low': { key: (facts) => facts.designArenaElo, descending: true },
};

/** Stable: ties keep catalogue order; models without the key come last, in catalogue order. */
export function sortModels(models: CatalogModel[], sort: Sort): CatalogModel[] {
  const { key, descending } = sortKeys[sort];
  const keyed = models.map((model) => ({ model, value: key(model.facts) }));
  keyed.sort((a, b) => {
    if (a.value === null || b.value === null) {
      if (a.value === b.value) return a.model.position - b.model.position;
      return a.value === null ? 1 : -1;
    }
    if (a.value === b.value) return a.model.position - b.model.position;
    return a.value < b.value === descending ? 1 : -1;
  });
  return keyed.map((entry) => entry.model);
}

export function selectModels(
  models: readonly CatalogModel[],
  query: ModelsQueryInput,
  now: () => Date,
): CatalogModel[] {
  const predicates = compileFilters(query, now);
  const selected = models.filter((model) => predicates.every((predicate) => predicate(model.facts, model)));
  return query.sort ? sortModels(selected, query.sort) : selected;
}
