import { readListColumn } from '../../admin/byok/byok-record.js';
import { POLICY_TOPIC } from '../../admin/workspaces/workspace-access.js';
import { earliestWindowDay, utcDay } from '../../billing/usage-windows.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import type { SecretBox } from '../../platform/secret-box.js';
import { type ByokCredential, type EffectivePolicy, resolvePolicy } from './effective-policy.js';
import type { PolicyRepository, SpendRows, WorkspacePolicyRows } from './policy-repository.js';

/**
 * How long a loaded workspace policy is trusted without looking again. Changes invalidate it at once
 * through the change bus; the limit bounds the damage when an invalidation is lost (Redis away).
 */
export const POLICY_MAX_AGE_MS = 60_000;

interface Entry {
  loadedAt: number;
  rows: Promise<WorkspacePolicyRows | null>;
  byok: Promise<ByokCredential[]>;
  /** Resolved policies per key hash (and creator), computed once per load. */
  resolved: Map<string, Promise<EffectivePolicy>>;
}

/** An allow-list column as a set, read by the BYOK API's own reader (null: no restriction). */
const listSet = (text: string | null): ReadonlySet<string> | null => {
  const list = readListColumn(text);
  return list === null ? null : new Set(list);
};

function addToSpend(spend: SpendRows, day: string, usageNanos: number, byokNanos: number) {
  spend.lifetime.usage += usageNanos;
  spend.lifetime.byok += byokNanos;
  const entry = spend.days.find((row) => row.day === day);
  if (entry) {
    entry.usage += usageNanos;
    entry.byok += byokNanos;
  } else {
    spend.days.push({ day, usage: usageNanos, byok: byokNanos });
  }
}

/**
 * Workspace policies (budgets and their spend, guardrails and assignments, BYOK credentials) served
 * from memory after the first request of a workspace, like keys: loads are coalesced, any change
 * drops the workspace on every instance through the change bus, and spend settled here is added
 * to the cached windows so budgets stay current between loads.
 */
export function createPolicyCache(options: {
  repository: PolicyRepository;
  bus: ChangeBus;
  clock: Clock;
  secretBox: SecretBox;
  /** Reports a stored BYOK secret that could not be opened (a changed master key). */
  onUnreadableSecret: (credentialId: string, error: unknown) => void;
}) {
  const { repository, bus, clock, secretBox } = options;
  const entries = new Map<string, Entry>();
  /**
   * The spend a dropped entry had counted, merged into the next load: records of the last few
   * milliseconds may not be written yet (group commits), and a reload must not forget them.
   */
  const carried = new Map<string, Promise<WorkspacePolicyRows | null>>();

  function drop(workspaceId: string) {
    const entry = entries.get(workspaceId);
    if (!entry) return;
    entries.delete(workspaceId);
    carried.set(
      workspaceId,
      entry.rows.catch(() => null),
    );
  }

  bus.subscribe(POLICY_TOPIC, drop);
  bus.onResync(() => {
    for (const workspaceId of [...entries.keys()]) drop(workspaceId);
  });

  function openCredentials(rows: WorkspacePolicyRows | null): ByokCredential[] {
    const credentials: ByokCredential[] = [];
    for (const row of rows?.byok ?? []) {
      try {
        credentials.push({
          id: row.id,
          provider: row.provider,
          secret: secretBox.open(row.secret_ciphertext),
          isFallback: row.is_fallback === 1,
          sortOrder: row.sort_order,
          allowedKeyHashes: listSet(row.allowed_api_key_hashes),
          allowedModels: listSet(row.allowed_models),
          allowedUserIds: listSet(row.allowed_user_ids),
        });
      } catch (error) {
        // A credential that cannot be read is skipped, never used half-read.
        options.onUnreadableSecret(row.id, error);
      }
    }
    return credentials;
  }

  function entryFor(workspaceId: string): Entry {
    const now = clock.now().getTime();
    let entry = entries.get(workspaceId);
    if (entry && now - entry.loadedAt < POLICY_MAX_AGE_MS) return entry;
    const previous = carried.get(workspaceId) ?? (entry ? entry.rows.catch(() => null) : null);
    carried.delete(workspaceId);
    const rows = repository
      .load(workspaceId, earliestWindowDay(clock.now()))
      .then(async (loaded) => (loaded && previous ? mergeSpend(loaded, await previous) : loaded));
    const created: Entry = {
      loadedAt: now,
      rows,
      byok: rows.then(openCredentials),
      resolved: new Map(),
    };
    entry = created;
    entries.set(workspaceId, created);
    // A failed load is not remembered: the next request tries again.
    rows.catch(() => {
      if (entries.get(workspaceId) === created) entries.delete(workspaceId);
    });
    return created;
  }

  return {
    /** The policy that applies to a key of this workspace; null when the workspace is gone. */
    async get(key: {
      workspaceId: string;
      hash: string;
      creatorUserId: string | null;
    }): Promise<EffectivePolicy | null> {
      const entry = entryFor(key.workspaceId);
      const cacheKey = `${key.hash}:${key.creatorUserId ?? ''}`;
      let resolved = entry.resolved.get(cacheKey);
      if (!resolved) {
        resolved = Promise.all([entry.rows, entry.byok]).then(([rows, byok]) => {
          if (!rows) throw new WorkspaceGoneError(key.workspaceId);
          return resolvePolicy(rows, { hash: key.hash, creatorUserId: key.creatorUserId }, byok);
        });
        entry.resolved.set(cacheKey, resolved);
        resolved.catch(() => entry.resolved.delete(cacheKey));
      }
      try {
        return await resolved;
      } catch (error) {
        if (error instanceof WorkspaceGoneError) return null;
        throw error;
      }
    },

    /** Adds settled spend to the cached windows of the workspace and of the key's member. */
    addUsage(
      key: { workspaceId: string; creatorUserId: string | null },
      amount: { usageNanos: number; byokNanos: number; at: Date },
    ): void {
      const entry = entries.get(key.workspaceId);
      if (!entry) return;
      const day = utcDay(amount.at);
      entry.rows
        .then((rows) => {
          if (!rows) return;
          addToSpend(rows.spend, day, amount.usageNanos, amount.byokNanos);
          const member = key.creatorUserId === null ? undefined : rows.memberSpend.get(key.creatorUserId);
          if (member) addToSpend(member, day, amount.usageNanos, amount.byokNanos);
        })
        .catch(() => {});
    },
  };
}

/** Takes, per day and in total, the larger of the stored and the previously counted spend. */
function mergeSpend(loaded: WorkspacePolicyRows, previous: WorkspacePolicyRows | null): WorkspacePolicyRows {
  if (!previous) return loaded;
  const merge = (into: SpendRows, from: SpendRows) => {
    into.lifetime.usage = Math.max(into.lifetime.usage, from.lifetime.usage);
    into.lifetime.byok = Math.max(into.lifetime.byok, from.lifetime.byok);
    for (const day of from.days) {
      const entry = into.days.find((row) => row.day === day.day);
      if (!entry) into.days.push({ ...day });
      else {
        entry.usage = Math.max(entry.usage, day.usage);
        entry.byok = Math.max(entry.byok, day.byok);
      }
    }
  };
  merge(loaded.spend, previous.spend);
  for (const [member, spend] of previous.memberSpend) {
    const into = loaded.memberSpend.get(member);
    if (into) merge(into, spend);
    else
      loaded.memberSpend.set(member, {
        days: spend.days.map((day) => ({ ...day })),
        lifetime: { ...spend.lifetime },
      });
  }
  return loaded;
}

class WorkspaceGoneError extends Error {
  constructor(workspaceId: string) {
    super(`workspace ${workspaceId} no longer exists`);
  }
}

export type PolicyCache = ReturnType<typeof createPolicyCache>;
