import { usdToNanos } from '../../billing/money.js';
import type { Catalog } from '../../catalog/catalog.js';
import { providerBase } from '../../catalog/provider-base.js';
import { invalidRequest } from '../../errors/app-error.js';
import {
  BUILTIN_FILTERS,
  type BuiltinFilter,
  type BuiltinFilterSlug,
  type CustomFilter,
  type FilterAction,
} from './builtin-filter-catalog.js';
import type { GuardrailRow } from './guardrail-record.js';

/** Body fields of `POST /guardrails` and `PATCH /guardrails/{id}` after schema validation. */
export interface GuardrailInput {
  name?: string;
  description?: string | null;
  limit_usd?: number | null;
  reset_interval?: 'daily' | 'weekly' | 'monthly' | null;
  allowed_models?: string[] | null;
  allowed_providers?: string[] | null;
  ignored_models?: string[] | null;
  ignored_providers?: string[] | null;
  enforce_zdr?: boolean | null;
  enforce_zdr_anthropic?: boolean | null;
  enforce_zdr_openai?: boolean | null;
  enforce_zdr_google?: boolean | null;
  enforce_zdr_other?: boolean | null;
  content_filter_builtins?: Array<{
    slug: BuiltinFilterSlug;
    action: FilterAction;
    label?: string;
    scan_scope?: 'user_only' | 'all_messages';
  }> | null;
  content_filters?: Array<{ pattern: string; action: FilterAction; label?: string | null }> | null;
}

export const ZDR_FLAGS = [
  'enforce_zdr_anthropic',
  'enforce_zdr_openai',
  'enforce_zdr_google',
  'enforce_zdr_other',
] as const;

type Columns = Partial<Omit<GuardrailRow, 'id' | 'workspace_id' | 'is_workspace_default' | 'created_at'>>;

const invalid = (field: string, rule: string) =>
  invalidRequest(`Invalid request parameters: ${field} ${rule}`);
const json = (value: unknown[] | null): string | null => (value === null ? null : JSON.stringify(value));

function builtinFilters(filters: NonNullable<GuardrailInput['content_filter_builtins']>): BuiltinFilter[] {
  const seen = new Set<string>();
  return filters.map((filter, index) => {
    const facts = BUILTIN_FILTERS[filter.slug];
    if (!facts.actions.includes(filter.action)) {
      throw invalid(
        `body.content_filter_builtins.${index}.action`,
        `must be one of ${facts.actions.join(', ')} for slug ${filter.slug} (flag is only for regex-prompt-injection)`,
      );
    }
    if (seen.has(filter.slug)) {
      throw invalid(
        `body.content_filter_builtins.${index}.slug`,
        `repeats ${filter.slug}: one filter per slug`,
      );
    }
    seen.add(filter.slug);
    // The label is the catalogue's whatever the client sent (reference §4.2: read-only).
    return {
      slug: filter.slug,
      action: filter.action,
      label: facts.label,
      ...(filter.scan_scope ? { scan_scope: filter.scan_scope } : {}),
    };
  });
}

const customFilters = (filters: NonNullable<GuardrailInput['content_filters']>): CustomFilter[] =>
  filters.map((filter) => ({ pattern: filter.pattern, action: filter.action, label: filter.label ?? null }));

/**
 * Turns a validated body into the columns it sets: only supplied fields, model and provider names
 * checked against the catalogue, the deprecated `enforce_zdr` copied into each per-vendor flag the
 * body does not set (spec 2.5 rule 1). Custom patterns are checked by the service (asynchronously).
 */
export function createGuardrailRules(catalog: Catalog) {
  let providers: Set<string> | null = null;
  /** Directory providers plus providers that only appear on endpoints; built once, on first use. */
  function knownProviders(): Set<string> {
    if (!providers) {
      providers = new Set(catalog.providers.map((provider) => provider.slug));
      for (const model of catalog.models) {
        for (const endpoint of model.endpoints) providers.add(providerBase(endpoint.provider_slug));
      }
    }
    return providers;
  }

  function models(field: string, names: string[]): string[] {
    const slugs = names.map((name, index) => {
      const found = catalog.lookup(name)[0];
      if (!found) {
        throw invalid(
          `${field}.${index}`,
          `must be a model id or canonical slug of the catalogue ("${name}" is not)`,
        );
      }
      return found.canonicalSlug;
    });
    return [...new Set(slugs)];
  }

  function providerSlugs(field: string, names: string[]): string[] {
    const slugs = names.map((name, index) => {
      const slug = name.trim().toLowerCase();
      if (!knownProviders().has(slug)) {
        throw invalid(
          `${field}.${index}`,
          `must be the slug of a provider in the catalogue ("${name}" is not)`,
        );
      }
      return slug;
    });
    return [...new Set(slugs)];
  }

  return {
    columnsOf(input: GuardrailInput): Columns {
      const columns: Columns = {};
      if (input.name !== undefined) columns.name = input.name;
      if (input.description !== undefined) columns.description = input.description;
      if (input.limit_usd !== undefined) {
        const nanos = input.limit_usd === null ? null : usdToNanos(input.limit_usd);
        if (nanos === 0) throw invalid('body.limit_usd', 'must be at least 0.000000001 (one nano-dollar)');
        columns.limit_nanos = nanos;
      }
      if (input.reset_interval !== undefined) columns.reset_interval = input.reset_interval;
      for (const field of ['allowed_models', 'ignored_models'] as const) {
        const value = input[field];
        if (value !== undefined)
          columns[field] = json(value === null ? null : models(`body.${field}`, value));
      }
      for (const field of ['allowed_providers', 'ignored_providers'] as const) {
        const value = input[field];
        if (value !== undefined) {
          columns[field] = json(value === null ? null : providerSlugs(`body.${field}`, value));
        }
      }
      for (const flag of ZDR_FLAGS) {
        const value = input[flag] !== undefined ? input[flag] : input.enforce_zdr;
        if (value !== undefined) columns[flag] = value === null ? null : value ? 1 : 0;
      }
      const builtins = input.content_filter_builtins;
      if (builtins !== undefined)
        columns.content_filter_builtins = json(builtins && builtinFilters(builtins));
      const custom = input.content_filters;
      if (custom !== undefined) columns.content_filters = json(custom && customFilters(custom));
      return columns;
    },
  };
}

export type GuardrailRules = ReturnType<typeof createGuardrailRules>;
