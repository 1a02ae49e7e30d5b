import type { BuiltinFilter, CustomFilter } from '../../admin/guardrails/builtin-filter-catalog.js';
import { toGuardrailRecord } from '../../admin/guardrails/guardrail-record.js';
import type { BroadcastTarget } from '../../broadcast/destination-rules.js';
import type { GuardrailTable, WorkspaceBudgetTable } from '../../storage/database-schema.js';
import type { SpendRows, WorkspacePolicyRows } from './policy-repository.js';

/** How a guardrail came to apply to a request (reference §8 `guardrail_scope`). */
export type GuardrailScope = 'api-key' | 'member' | 'workspace';

export interface AppliedGuardrail {
  id: string;
  name: string;
  scope: GuardrailScope;
}

/** Vendors with a ZDR flag of their own; every other model vendor is `other`. */
export type ZdrVendor = 'anthropic' | 'openai' | 'google' | 'other';

/** What the applicable guardrails allow the router to use, combined (reference §4.4). */
export interface RoutingRestrictions {
  /** Canonical model ids; the intersection of every allowlist, or null when none restricts. */
  allowedModels: ReadonlySet<string> | null;
  ignoredModels: ReadonlySet<string>;
  /** Provider slugs; intersection of allowlists, or null. */
  allowedProviders: ReadonlySet<string> | null;
  ignoredProviders: ReadonlySet<string>;
  /** Vendors whose models may only run on zero-data-retention endpoints (OR across guardrails). */
  zdrVendors: ReadonlySet<ZdrVendor>;
  /** The names of the guardrails that restrict, for error messages. */
  names: string;
}

/** A guardrail spending limit: per key for key and workspace guardrails, per member for member ones. */
export interface GuardrailLimit {
  guardrail: AppliedGuardrail;
  limitNanos: number;
  reset: 'daily' | 'weekly' | 'monthly' | null;
  /** `key:<hash>` or `member:<user id>`. */
  holder: string;
  /** The holder's recorded spend (null: the key's own usage, which the key cache keeps). */
  spend: SpendRows | null;
}

/** A usable BYOK credential, opened. */
export interface ByokCredential {
  id: string;
  provider: string;
  secret: string;
  isFallback: boolean;
  sortOrder: number;
  allowedKeyHashes: ReadonlySet<string> | null;
  allowedModels: ReadonlySet<string> | null;
  allowedUserIds: ReadonlySet<string> | null;
}

/** Everything the gateway enforces for one key, resolved from its workspace's policy. */
export interface EffectivePolicy {
  guardrails: AppliedGuardrail[];
  restrictions: RoutingRestrictions | null;
  /** The union of the applicable content filters, with the guardrail each came from. */
  filters: { builtins: BuiltinFilter[]; custom: CustomFilter[]; guardrails: AppliedGuardrail[] } | null;
  limits: GuardrailLimit[];
  budgets: WorkspaceBudgetTable[];
  includeByokInBudgets: boolean;
  workspaceSpend: SpendRows;
  /** BYOK credentials this key may use, by provider slug, in the order to try them. */
  byok: ReadonlyMap<string, ByokCredential[]>;
  /** Observability destinations whose key allowlist admits this key (empty: nothing is broadcast). */
  broadcast: BroadcastTarget[];
}

function intersect(current: Set<string> | null, next: readonly string[] | null): Set<string> | null {
  if (next === null) return current;
  if (current === null) return new Set(next);
  return new Set(next.filter((entry) => current.has(entry)));
}

/**
 * The guardrails that apply to a key (reference §4.4): the one assigned to the key, the one
 * assigned to its member (the key's creator), and the workspace's default guardrail once stored,
 * combined — allowlists intersect, ignore lists and content filters unite, ZDR is OR per vendor,
 * and each spending limit is checked on its own.
 */
export function resolvePolicy(
  rows: WorkspacePolicyRows,
  key: { hash: string; creatorUserId: string | null },
  byok: ByokCredential[],
): EffectivePolicy {
  const byId = new Map(rows.guardrails.map((guardrail) => [guardrail.id, guardrail]));
  const applied: Array<{ row: GuardrailTable; ref: AppliedGuardrail; holder: string }> = [];
  const add = (id: string | undefined, scope: GuardrailScope, holder: string) => {
    const row = id === undefined ? undefined : byId.get(id);
    if (row && !applied.some((entry) => entry.row.id === row.id))
      applied.push({ row, ref: { id: row.id, name: row.name, scope }, holder });
  };
  add(rows.keyAssignments.get(key.hash), 'api-key', `key:${key.hash}`);
  if (key.creatorUserId !== null)
    add(rows.memberAssignments.get(key.creatorUserId), 'member', `member:${key.creatorUserId}`);
  add(
    rows.guardrails.find((guardrail) => guardrail.is_workspace_default === 1)?.id,
    'workspace',
    `key:${key.hash}`,
  );

  let allowedModels: Set<string> | null = null;
  let allowedProviders: Set<string> | null = null;
  const ignoredModels = new Set<string>();
  const ignoredProviders = new Set<string>();
  const zdrVendors = new Set<ZdrVendor>();
  const builtins: BuiltinFilter[] = [];
  const custom: CustomFilter[] = [];
  const filterSources: AppliedGuardrail[] = [];
  const limits: GuardrailLimit[] = [];
  let restricts = false;
  for (const { row, ref, holder } of applied) {
    // The guardrail API's own reader of the row's JSON columns.
    const record = toGuardrailRecord(row);
    allowedModels = intersect(allowedModels, record.allowed_models);
    allowedProviders = intersect(allowedProviders, record.allowed_providers);
    for (const model of record.ignored_models ?? []) ignoredModels.add(model);
    for (const provider of record.ignored_providers ?? []) ignoredProviders.add(provider);
    const zdr: Array<[ZdrVendor, boolean | null]> = [
      ['anthropic', record.enforce_zdr_anthropic],
      ['openai', record.enforce_zdr_openai],
      ['google', record.enforce_zdr_google],
      ['other', record.enforce_zdr_other],
    ];
    for (const [vendor, enforced] of zdr) if (enforced) zdrVendors.add(vendor);
    if (
      record.allowed_models ||
      record.allowed_providers ||
      record.ignored_models ||
      record.ignored_providers ||
      zdr.some(([, enforced]) => enforced)
    )
      restricts = true;
    const rowBuiltins = record.content_filter_builtins ?? [];
    const rowCustom = record.content_filters ?? [];
    if (rowBuiltins.length > 0 || rowCustom.length > 0) {
      builtins.push(...rowBuiltins);
      custom.push(...rowCustom);
      filterSources.push(ref);
    }
    if (row.limit_nanos !== null) {
      const member = holder.startsWith('member:') ? holder.slice('member:'.length) : null;
      limits.push({
        guardrail: ref,
        limitNanos: Number(row.limit_nanos),
        reset: record.reset_interval,
        holder,
        spend: member === null ? null : memberSpendOf(rows, member),
      });
    }
  }

  const usable = new Map<string, ByokCredential[]>();
  for (const credential of byok) {
    if (credential.allowedKeyHashes && !credential.allowedKeyHashes.has(key.hash)) continue;
    if (
      credential.allowedUserIds &&
      (key.creatorUserId === null || !credential.allowedUserIds.has(key.creatorUserId))
    )
      continue;
    const list = usable.get(credential.provider) ?? [];
    list.push(credential);
    usable.set(credential.provider, list);
  }

  return {
    guardrails: applied.map((entry) => entry.ref),
    restrictions: restricts
      ? {
          allowedModels,
          ignoredModels,
          allowedProviders,
          ignoredProviders,
          zdrVendors,
          names: applied.map((entry) => `"${entry.ref.name}"`).join(', '),
        }
      : null,
    filters:
      builtins.length > 0 || custom.length > 0 ? { builtins, custom, guardrails: filterSources } : null,
    limits,
    budgets: rows.budgets,
    includeByokInBudgets: rows.workspace.include_byok_in_budgets === 1,
    workspaceSpend: rows.spend,
    byok: usable,
    broadcast: rows.broadcast.filter((target) => target.keyHashes === null || target.keyHashes.has(key.hash)),
  };
}

/** The member's spend rows, created empty when it has none, so that later spend lands in them. */
function memberSpendOf(rows: WorkspacePolicyRows, member: string): SpendRows {
  let spend = rows.memberSpend.get(member);
  if (!spend) {
    spend = { days: [], lifetime: { usage: 0, byok: 0 } };
    rows.memberSpend.set(member, spend);
  }
  return spend;
}

/** The vendor of a model for the per-vendor ZDR flags: its id's author prefix. */
export function vendorOf(modelId: string): ZdrVendor {
  const author = modelId.split('/')[0]?.toLowerCase() ?? '';
  return author === 'anthropic' || author === 'openai' || author === 'google' ? author : 'other';
}
