/**
 * An independent, deliberately plain re-computation of the catalogue contract (docs/catalog.md)
 * over the raw snapshot JSON. Nothing here comes from src/catalog: the tests compare the gateway's
 * answers with what these loops and filters compute.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SNAPSHOT_DIR = fileURLToPath(new URL('../../catalog-data/', import.meta.url));

export interface Snapshot {
  models: any[];
  endpoints: any[];
  providers: any[];
  usage: any[];
}

function readJson(directory: string, name: string): any[] {
  return JSON.parse(readFileSync(join(directory, name), 'utf8'));
}

/** The four files of a snapshot directory, parsed as they are. */
export function readSnapshot(directory: string = SNAPSHOT_DIR): Snapshot {
  return {
    models: readJson(directory, 'models.json'),
    endpoints: readJson(directory, 'endpoints.json'),
    providers: readJson(directory, 'providers.json'),
    usage: readJson(directory, 'usage-daily.json'),
  };
}

export const CATEGORIES: Record<string, RegExp> = {
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

export const SORTS = [
  'most-popular',
  'top-weekly',
  'newest',
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

const EU_CLOUD_REGIONS = [
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
];

// ---------------------------------------------------------------------------------------------
// Exact decimals: a decimal string becomes a BigInt counting units of 10^-scale.

/** `"0.00000125"`, 36 → 1250000000000000000000000000000n. Throws when the text is not a plain decimal. */
export function decimalToScaled(text: string, scale: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) throw new Error(`not a plain decimal: ${text}`);
  const sign = match[1] === '-' ? -1n : 1n;
  const whole = match[2]!;
  const fraction = match[3] ?? '';
  if (fraction.length > scale) throw new Error(`too many decimals for scale ${scale}: ${text}`);
  return sign * BigInt(whole + fraction.padEnd(scale, '0'));
}

/** Prices and bounds are compared in units of 10^-30 USD per million tokens. */
export const PRICE_SCALE = 30;

/** A per-token price string as USD per million tokens, in units of 10^-30: the point moves six places. */
export function perMillionScaled(pricePerToken: string): bigint {
  return decimalToScaled(pricePerToken, PRICE_SCALE + 6);
}

/** The per-million price as a decimal string, by moving the point textually ("0.00000125" → "1.25"). */
export function perMillionText(pricePerToken: string): string {
  const negative = pricePerToken.startsWith('-');
  const body = negative ? pricePerToken.slice(1) : pricePerToken;
  const [whole, fraction = ''] = body.split('.');
  const padded = fraction.padEnd(6, '0');
  let integer = `${whole}${padded.slice(0, 6)}`.replace(/^0+(?=\d)/, '');
  const rest = padded.slice(6).replace(/0+$/, '');
  if (integer === '') integer = '0';
  return `${negative ? '-' : ''}${integer}${rest ? `.${rest}` : ''}`;
}

// ---------------------------------------------------------------------------------------------
// The catalogue: listed models, visible endpoints, derived facts.

export interface Facts {
  author: string;
  variant: string;
  endpoints: any[];
  /** USD per million tokens in units of 10^-30; undefined = no price. */
  promptPerMillion: bigint | undefined;
  completionPerMillion: bigint | undefined;
  /** prompt + completion per token in units of 10^-36 (twice the average; same order). */
  averagePriceTimesTwo: bigint | undefined;
  zdr: boolean;
  eu: boolean;
  distillable: boolean;
  categories: string[];
  popularity: number | undefined;
  weeklyTokens: number | undefined;
  toolSuccessRate: number | undefined;
  throughput: number | undefined;
  latency: number | undefined;
  intelligenceIndex: number | undefined;
  codingIndex: number | undefined;
  agenticIndex: number | undefined;
  designArenaElo: number | undefined;
}

export interface Catalogue {
  /** The listed models, in catalogue order. */
  models: any[];
  /** Endpoint rows of non-hidden providers (of any model), in file order. */
  visibleEndpoints: any[];
  providers: any[];
  facts: Map<string, Facts>;
}

/** The provider slug of an endpoint row: `provider_slug` up to the first `/`. */
export function endpointProviderSlug(row: any): string {
  return String(row.provider_slug).split('/')[0]!;
}

function authorOf(id: string): string {
  let author = id.split('/')[0]!;
  if (author.startsWith('~')) author = author.slice(1);
  return author;
}

function variantOf(id: string): string {
  const colon = id.indexOf(':');
  return colon === -1 ? 'standard' : id.slice(colon + 1);
}

function isEuRegion(region: unknown): boolean {
  if (typeof region !== 'string') return false;
  const value = region.toLowerCase();
  if (value === 'eu' || value === 'europe') return true;
  if (value.startsWith('eu-') || value.startsWith('europe-')) return true;
  return EU_CLOUD_REGIONS.includes(value);
}

function priceOrUndefined(text: unknown): bigint | undefined {
  if (typeof text !== 'string') return undefined;
  const value = perMillionScaled(text);
  return value < 0n ? undefined : value;
}

function dayOf(date: string): string {
  return date.slice(0, 10);
}

function addDays(day: string, days: number): string {
  const at = new Date(`${day}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() + days);
  return at.toISOString().slice(0, 10);
}

function computeFacts(model: any, endpoints: any[], usage: any[], weekStart: string, latest: string): Facts {
  const variant = variantOf(model.id);
  const promptPerMillion = priceOrUndefined(model.pricing?.prompt);
  const completionPerMillion = priceOrUndefined(model.pricing?.completion);

  let zdr = false;
  let eu = false;
  let throughput: number | undefined;
  let latency: number | undefined;
  for (const row of endpoints) {
    if (row.data_policy?.training === false && row.data_policy?.retains_prompts === false) zdr = true;
    if (isEuRegion(row.provider_region)) eu = true;
    if (row.stats) {
      const p50Throughput = row.stats.p50_throughput;
      const p50Latency = row.stats.p50_latency;
      if (typeof p50Throughput === 'number' && (throughput === undefined || p50Throughput > throughput))
        throughput = p50Throughput;
      if (typeof p50Latency === 'number' && (latency === undefined || p50Latency < latency))
        latency = p50Latency;
    }
  }

  const text = `${model.name} ${model.description}`;
  const analysisIndex = (name: string): number | undefined => {
    const value = (model.benchmarks?.artificial_analysis as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'number' ? value : undefined;
  };
  const intelligence = analysisIndex('intelligence_index');
  const coding = analysisIndex('coding_index');
  const generalistCategories = [
    'marketing',
    'marketing/seo',
    'technology',
    'science',
    'legal',
    'finance',
    'health',
    'trivia',
    'academia',
  ];
  const categories: string[] = [];
  for (const [category, pattern] of Object.entries(CATEGORIES)) {
    const generalist =
      generalistCategories.includes(category) && intelligence !== undefined && intelligence >= 40;
    const coder = category === 'programming' && coding !== undefined && coding >= 40;
    if (pattern.test(text) || generalist || coder) categories.push(category);
  }

  const rows = usage.filter((row) => row.model_permaslug === model.canonical_slug && row.variant === variant);
  let popularity: number | undefined;
  let weeklyTokens: number | undefined;
  let toolCalls = 0;
  let toolErrors = 0;
  for (const row of rows) {
    popularity = (popularity ?? 0) + row.count;
    const day = dayOf(row.date);
    if (day >= weekStart && day <= latest)
      weeklyTokens = (weeklyTokens ?? 0) + row.total_prompt_tokens + row.total_completion_tokens;
    toolCalls += row.total_tool_calls;
    toolErrors += row.requests_with_tool_call_errors;
  }
  const toolSuccessRate = toolCalls === 0 ? undefined : (toolCalls - toolErrors) / toolCalls;

  const analysis = model.benchmarks?.artificial_analysis;
  const indexOf = (name: string): number | undefined =>
    typeof analysis?.[name] === 'number' ? analysis[name] : undefined;
  let designArenaElo: number | undefined;
  for (const entry of model.benchmarks?.design_arena ?? []) {
    if (typeof entry.elo === 'number' && (designArenaElo === undefined || entry.elo > designArenaElo))
      designArenaElo = entry.elo;
  }

  return {
    author: authorOf(model.id),
    variant,
    endpoints,
    promptPerMillion,
    completionPerMillion,
    averagePriceTimesTwo:
      promptPerMillion !== undefined && completionPerMillion !== undefined
        ? promptPerMillion + completionPerMillion
        : undefined,
    zdr,
    eu,
    distillable: typeof model.hugging_face_id === 'string' && model.hugging_face_id.trim() !== '',
    categories,
    popularity,
    weeklyTokens,
    toolSuccessRate,
    throughput,
    latency,
    intelligenceIndex: indexOf('intelligence_index'),
    codingIndex: indexOf('coding_index'),
    agenticIndex: indexOf('agentic_index'),
    designArenaElo,
  };
}

/** The catalogue of a snapshot with some providers hidden (by slug). */
export function buildCatalogue(snapshot: Snapshot, hiddenProviders: string[] = []): Catalogue {
  const hidden = hiddenProviders.map((slug) => slug.toLowerCase());
  const visibleEndpoints = snapshot.endpoints.filter(
    (row) => !hidden.includes(endpointProviderSlug(row).toLowerCase()),
  );
  let latest = '';
  for (const row of snapshot.usage) if (dayOf(row.date) > latest) latest = dayOf(row.date);
  const weekStart = addDays(latest, -6);

  const models: any[] = [];
  const facts = new Map<string, Facts>();
  for (const model of snapshot.models) {
    const all = snapshot.endpoints.filter((row) => row.model === model.id);
    const visible = visibleEndpoints.filter((row) => row.model === model.id);
    if (all.length > 0 && visible.length === 0) continue; // only hidden providers served it
    models.push(model);
    facts.set(model.id, computeFacts(model, visible, snapshot.usage, weekStart, latest));
  }
  const providers = snapshot.providers.filter((provider) => !hidden.includes(provider.slug.toLowerCase()));
  return { models, visibleEndpoints, providers, facts };
}

// ---------------------------------------------------------------------------------------------
// The query of GET /models: filters, then the sort.

export type Query = Record<string, string>;

function commaList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
}

function lower(values: unknown): string[] {
  return Array.isArray(values) ? values.map((value) => String(value).toLowerCase()) : [];
}

function within(value: number, min: string | undefined, max: string | undefined): boolean {
  if (min !== undefined && value < Number(min)) return false;
  if (max !== undefined && value > Number(max)) return false;
  return true;
}

function priceWithin(price: bigint | undefined, min: string | undefined, max: string | undefined): boolean {
  if (min === undefined && max === undefined) return true;
  if (price === undefined) return false;
  if (min !== undefined && price < decimalToScaled(min, PRICE_SCALE)) return false;
  if (max !== undefined && price > decimalToScaled(max, PRICE_SCALE)) return false;
  return true;
}

function optionalWithin(
  value: number | undefined,
  min: string | undefined,
  max: string | undefined,
): boolean {
  if (min === undefined && max === undefined) return true;
  if (value === undefined) return false;
  return within(value, min, max);
}

/** Whether one model passes every filter of the query (the query is assumed valid). */
export function keeps(catalogue: Catalogue, model: any, query: Query, now: Date): boolean {
  const facts = catalogue.facts.get(model.id)!;

  if (query.category !== undefined && !facts.categories.includes(query.category.trim().toLowerCase()))
    return false;

  if (query.supported_parameters !== undefined) {
    const supported = lower(model.supported_parameters);
    for (const name of commaList(query.supported_parameters)) if (!supported.includes(name)) return false;
  }

  const wantedOutputs = commaList(query.output_modalities ?? 'text');
  if (!wantedOutputs.includes('all')) {
    const outputs = lower(model.architecture?.output_modalities);
    let any = false;
    for (const modality of wantedOutputs) if (outputs.includes(modality)) any = true;
    if (!any) return false;
  }

  if (query.input_modalities !== undefined) {
    const inputs = lower(model.architecture?.input_modalities);
    for (const modality of commaList(query.input_modalities)) if (!inputs.includes(modality)) return false;
  }

  if (query.q !== undefined) {
    const text = query.q.trim().toLowerCase();
    if (text !== '') {
      const haystacks = [model.name, model.id, model.canonical_slug].map((value) =>
        String(value).toLowerCase(),
      );
      if (!haystacks.some((haystack) => haystack.includes(text))) return false;
    }
  }

  if (query.context !== undefined && model.context_length < Number(query.context)) return false;

  if (!priceWithin(facts.promptPerMillion, query.min_price, query.max_price)) return false;
  if (!priceWithin(facts.completionPerMillion, query.min_output_price, query.max_output_price)) return false;

  if (query.arch !== undefined) {
    const tokenizer = String(model.architecture?.tokenizer ?? '').toLowerCase();
    if (!tokenizer.startsWith(query.arch.toLowerCase())) return false;
  }

  if (
    query.model_authors !== undefined &&
    !commaList(query.model_authors).includes(facts.author.toLowerCase())
  )
    return false;

  if (query.providers !== undefined) {
    const wanted = commaList(query.providers);
    let found = false;
    for (const row of facts.endpoints) {
      if (wanted.includes(String(row.provider_name).toLowerCase())) found = true;
      if (wanted.includes(endpointProviderSlug(row).toLowerCase())) found = true;
    }
    if (!found) return false;
  }

  if (query.distillable !== undefined && facts.distillable !== (query.distillable.toLowerCase() === 'true'))
    return false;
  if (query.zdr !== undefined && !facts.zdr) return false;
  if (query.region !== undefined && !facts.eu) return false;

  if (query.min_age_days !== undefined || query.max_age_days !== undefined) {
    const age = Math.floor((now.getTime() - model.created * 1000) / 86_400_000);
    if (!within(age, query.min_age_days, query.max_age_days)) return false;
  }

  if (!optionalWithin(facts.intelligenceIndex, query.min_intelligence_index, query.max_intelligence_index))
    return false;
  if (!optionalWithin(facts.codingIndex, query.min_coding_index, query.max_coding_index)) return false;
  if (!optionalWithin(facts.agenticIndex, query.min_agentic_index, query.max_agentic_index)) return false;
  if (!optionalWithin(facts.toolSuccessRate, query.min_tool_success_rate, query.max_tool_success_rate))
    return false;

  return true;
}

type SortKey = number | bigint | undefined;

/** The sort key of a model and whether larger keys come first. */
function sortKey(sort: string, model: any, facts: Facts): { key: SortKey; descending: boolean } {
  switch (sort) {
    case 'most-popular':
      return { key: facts.popularity, descending: true };
    case 'top-weekly':
      return { key: facts.weeklyTokens, descending: true };
    case 'newest':
      return { key: model.created, descending: true };
    case 'pricing-low-to-high':
      return { key: facts.averagePriceTimesTwo, descending: false };
    case 'pricing-high-to-low':
      return { key: facts.averagePriceTimesTwo, descending: true };
    case 'context-high-to-low':
      return { key: model.context_length, descending: true };
    case 'throughput-high-to-low':
      return { key: facts.throughput, descending: true };
    case 'latency-low-to-high':
      return { key: facts.latency, descending: false };
    case 'intelligence-high-to-low':
      return { key: facts.intelligenceIndex, descending: true };
    case 'coding-high-to-low':
      return { key: facts.codingIndex, descending: true };
    case 'agentic-high-to-low':
      return { key: facts.agenticIndex, descending: true };
    case 'design-arena-elo-high-to-low':
      return { key: facts.designArenaElo, descending: true };
    default:
      throw new Error(`unknown sort ${sort}`);
  }
}

/** Stable sort: keyed models by key (ties in catalogue order), then the models lacking the key. */
export function sortModels(catalogue: Catalogue, models: any[], sort: string): any[] {
  const keyed: { model: any; key: number | bigint; position: number }[] = [];
  const lacking: any[] = [];
  let descending = false;
  models.forEach((model, position) => {
    const result = sortKey(sort, model, catalogue.facts.get(model.id)!);
    descending = result.descending;
    if (result.key === undefined || result.key === null) lacking.push(model);
    else keyed.push({ model, key: result.key, position });
  });
  keyed.sort((a, b) => {
    if (a.key !== b.key) {
      const aFirst = descending ? a.key > b.key : a.key < b.key;
      return aFirst ? -1 : 1;
    }
    return a.position - b.position;
  });
  return [...keyed.map((entry) => entry.model), ...lacking];
}

/** The models GET /models answers for a (valid) query, in answer order. */
export function expectedModels(catalogue: Catalogue, query: Query, now: Date = new Date()): any[] {
  const kept = catalogue.models.filter((model) => keeps(catalogue, model, query, now));
  return query.sort === undefined ? kept : sortModels(catalogue, kept, query.sort);
}

export function expectedIds(catalogue: Catalogue, query: Query, now: Date = new Date()): string[] {
  return expectedModels(catalogue, query, now).map((model) => model.id);
}

/** The query string of a query object (values URL-encoded). */
export function queryString(query: Query): string {
  const text = new URLSearchParams(query).toString();
  return text === '' ? '' : `?${text}`;
}

// ---------------------------------------------------------------------------------------------
// Endpoint records.

/** ZDR endpoints: visible endpoint rows of listed models that neither train nor retain prompts. */
export function expectedZdrEndpoints(catalogue: Catalogue): any[] {
  const listed = new Set(catalogue.models.map((model) => model.id));
  return catalogue.visibleEndpoints.filter(
    (row) =>
      listed.has(row.model) &&
      row.data_policy?.training === false &&
      row.data_policy?.retains_prompts === false,
  );
}

/** The endpoints listed under a canonical slug: those of every listed model sharing it, file order. */
export function expectedEndpointsOfSlug(catalogue: Catalogue, canonicalSlug: string): any[] {
  const ids = new Set(
    catalogue.models.filter((model) => model.canonical_slug === canonicalSlug).map((model) => model.id),
  );
  return catalogue.visibleEndpoints.filter((row) => ids.has(row.model));
}

function percentiles(stats: any, kind: 'latency' | 'throughput') {
  if (!stats) return null;
  return {
    p50: stats[`p50_${kind}`],
    p75: stats[`p75_${kind}`],
    p90: stats[`p90_${kind}`],
    p99: stats[`p99_${kind}`],
  };
}

/** The Endpoint record of docs/catalog.md for one row. */
export function expectedEndpointRecord(row: any): any {
  return {
    name: `${row.provider_name} | ${row.model_permaslug}`,
    model_id: row.model_permaslug,
    model_name: row.model_name,
    provider_name: row.provider_name,
    tag: row.provider_slug,
    context_length: row.context_length,
    max_completion_tokens: row.max_completion_tokens,
    max_prompt_tokens: row.max_prompt_tokens,
    pricing: { ...row.pricing, image: row.pricing.image ?? '0', request: row.pricing.request ?? '0' },
    quantization: row.quantization,
    supported_parameters: row.supported_parameters,
    supports_implicit_caching:
      row.pricing.input_cache_read !== undefined && row.pricing.input_cache_write === undefined,
    status: row.status,
    uptime_last_5m: null,
    uptime_last_30m: null,
    uptime_last_1d: null,
    latency_last_30m: percentiles(row.stats, 'latency'),
    throughput_last_30m: percentiles(row.stats, 'throughput'),
  };
}

/** The ZDR record of spec 2.12 for one row. */
export function expectedZdrRecord(row: any): any {
  const record = expectedEndpointRecord(row);
  return {
    ...record,
    status: String(row.status),
    pricing: {
      prompt: row.pricing.prompt,
      completion: row.pricing.completion,
      image: row.pricing.image ?? '0',
      request: row.pricing.request ?? '0',
    },
    quantization: typeof row.quantization === 'string' ? row.quantization : 'unknown',
    max_completion_tokens: row.max_completion_tokens ?? row.context_length,
    max_prompt_tokens: row.max_prompt_tokens ?? row.context_length,
  };
}
