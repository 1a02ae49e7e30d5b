import { usdToNanos } from '../../billing/money.js';
import { earliestWindowDay, utcDay } from '../../billing/usage-windows.js';
import { AppError, invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { Clock } from '../../platform/clock.js';
import { hashApiKey, maskApiKey, newApiKeySecret } from '../../platform/ids.js';
import { createWorkspaceAccess } from '../workspaces/workspace-access.js';
import type { WorkspaceRepository } from '../workspaces/workspace-repository.js';
import type { KeyCache } from './key-cache.js';
import { type KeyRecord, toKeyRecord } from './key-record.js';
import { emptyUsage, type KeyRepository, type KeyRow } from './key-repository.js';

export type LimitReset = 'daily' | 'weekly' | 'monthly';

export interface CreateKeyInput {
  name: string;
  limit?: number | null;
  limit_reset?: LimitReset | null;
  include_byok_in_limit?: boolean;
  expires_at?: string | null;
  creator_user_id?: string | null;
  workspace_id?: string;
}

export interface UpdateKeyInput {
  name?: string;
  disabled?: boolean;
  limit?: number | null;
  limit_reset?: LimitReset | null;
  include_byok_in_limit?: boolean;
}

export const KEYS_PAGE_SIZE = 100;

const utcDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|\+00:00)$/i;

/** `expires_at` must be a real instant written in UTC and lie in the future. */
function parseExpiry(value: string, now: Date): string {
  if (!utcDateTime.test(value)) {
    throw invalidRequest(
      'Invalid request parameters: body.expires_at must be an ISO 8601 date-time with seconds in UTC (ending in Z or +00:00)',
    );
  }
  const at = new Date(value);
  // Date() rolls impossible dates over (Feb 30 → Mar 2, 24:00 → next day); a round trip catches them.
  if (Number.isNaN(at.getTime()) || at.toISOString().slice(0, 19) !== value.slice(0, 19).toUpperCase()) {
    throw invalidRequest('Invalid request parameters: body.expires_at is not a valid date and time');
  }
  if (at.getTime() <= now.getTime())
    throw invalidRequest('Invalid request parameters: body.expires_at must be in the future');
  return at.toISOString();
}

/** API keys: creation, listing, updates, and the views of spec 2.3 and `GET /key`. */
export function createKeyService(options: {
  keys: KeyRepository;
  workspaces: WorkspaceRepository;
  cache: KeyCache;
  clock: Clock;
}) {
  const { keys, workspaces, cache, clock } = options;
  const access = createWorkspaceAccess(workspaces);

  /**
   * The workspace a request acts on. An organization key (or the CLI, with no caller) may name any
   * workspace and defaults to the default one; any other key acts on its own workspace, and naming
   * another one is a 404, as if it did not exist (ids of other workspaces must not leak).
   */
  async function resolveWorkspace(
    id: string | undefined,
    field: string,
    caller?: Principal,
  ): Promise<string> {
    if (caller && !(await access.isOrganizationKey(caller))) {
      if (id !== undefined && id.toLowerCase() !== caller.workspaceId) throw notFound('Workspace not found');
      return caller.workspaceId;
    }
    if (id === undefined) {
      const fallback = await workspaces.findDefault();
      if (!fallback) throw new AppError('server', 'The default workspace is missing');
      return fallback.id;
    }
    // UUIDs are stored lowercase; clients may write them in either case.
    const found = await workspaces.findById(id.toLowerCase());
    if (!found) throw invalidRequest(`Invalid request parameters: ${field} names no existing workspace`);
    return found.id;
  }

  /**
   * A limit in nano-dollars; null for none. Zero is a limit (the key spends nothing); a positive
   * amount under one nano-dollar would be stored as that zero, so it is refused instead.
   */
  function limitNanosOf(limit: number | null | undefined): number | null {
    if (limit === undefined || limit === null) return null;
    const nanos = usdToNanos(limit);
    if (limit > 0 && nanos === 0)
      throw invalidRequest(
        'Invalid request parameters: body.limit must be 0 or at least 0.000000001 (one nano-dollar)',
      );
    return nanos;
  }

  /** The key with this hash, if the caller may see it; otherwise the 404 of an unknown key. */
  async function reachableKey(hash: string, caller?: Principal): Promise<KeyRow> {
    const row = await keys.findByHash(hash);
    if (!row || (caller && !(await access.canAccess(caller, row.workspace_id)))) {
      throw notFound('API key not found');
    }
    return row;
  }

  async function recordOf(row: KeyRow): Promise<KeyRecord> {
    const now = clock.now();
    const usage = (await keys.usageFor([row.hash], earliestWindowDay(now))).get(row.hash);
    return toKeyRecord(row, usage ?? emptyUsage(), now);
  }

  async function insertKey(
    input: CreateKeyInput & { management: boolean; secret?: string; ifAbsent?: boolean; caller?: Principal },
  ) {
    const now = clock.now();
    const workspaceId = await resolveWorkspace(input.workspace_id, 'body.workspace_id', input.caller);
    const secret = input.secret ?? newApiKeySecret();
    const row: KeyRow = {
      hash: hashApiKey(secret),
      name: input.name,
      label: maskApiKey(secret),
      is_management: input.management ? 1 : 0,
      disabled: 0,
      limit_nanos: limitNanosOf(input.limit),
      limit_reset: input.limit_reset ?? null,
      include_byok_in_limit: input.include_byok_in_limit ? 1 : 0,
      expires_at:
        input.expires_at === undefined || input.expires_at === null
          ? null
          : parseExpiry(input.expires_at, now),
      creator_user_id: input.creator_user_id ?? null,
      workspace_id: workspaceId,
      created_at: now.toISOString(),
      updated_at: null,
    };
    if (input.ifAbsent) {
      // Several instances may register the same bootstrap key at once; one insert wins, quietly.
      if (!(await keys.insertIfAbsent(row))) return null;
    } else {
      await keys.insert(row);
    }
    // A lookup of this hash may have been remembered as "unknown"; forget it everywhere.
    await cache.invalidate(row.hash);
    return { data: toKeyRecord(row, emptyUsage(), now), key: secret };
  }

  return {
    /** `caller` is the requesting key (HTTP); the CLI passes none and acts for the organization. */
    create: async (input: CreateKeyInput, caller?: Principal) =>
      (await insertKey({ ...input, management: false, caller }))!,

    createManagementKey: async (input: CreateKeyInput) => (await insertKey({ ...input, management: true }))!,

    /** Registers the configured bootstrap secret as a management key unless it is already known. */
    async ensureBootstrapKey(secret: string): Promise<boolean> {
      if (await keys.findByHash(hashApiKey(secret))) return false;
      return (await insertKey({ name: 'bootstrap', management: true, secret, ifAbsent: true })) !== null;
    },

    async list(
      query: {
        workspace_id?: string;
        include_disabled: boolean;
        offset: number;
      },
      caller?: Principal,
    ): Promise<KeyRecord[]> {
      const workspaceId = await resolveWorkspace(query.workspace_id, 'querystring.workspace_id', caller);
      const rows = await keys.list({
        workspaceId,
        includeDisabled: query.include_disabled,
        offset: query.offset,
        limit: KEYS_PAGE_SIZE,
      });
      const now = clock.now();
      const usage = await keys.usageFor(
        rows.map((row) => row.hash),
        earliestWindowDay(now),
      );
      return rows.map((row) => toKeyRecord(row, usage.get(row.hash) ?? emptyUsage(), now));
    },

    async listAll(): Promise<Array<KeyRecord & { is_management_key: boolean }>> {
      const rows = await keys.listAll();
      const now = clock.now();
      const usage = await keys.usageFor(
        rows.map((row) => row.hash),
        earliestWindowDay(now),
      );
      return rows.map((row) => ({
        ...toKeyRecord(row, usage.get(row.hash) ?? emptyUsage(), now),
        is_management_key: row.is_management === 1,
      }));
    },

    async get(hash: string, caller?: Principal): Promise<KeyRecord> {
      return recordOf(await reachableKey(hash, caller));
    },

    async update(hash: string, input: UpdateKeyInput, caller?: Principal): Promise<KeyRecord> {
      if (caller) await reachableKey(hash, caller);
      // A management key that disabled itself would lock its caller out for good: a restart with the
      // same bootstrap key leaves it disabled (it is only registered when absent).
      if (input.disabled === true && caller?.keyHash === hash)
        throw invalidRequest(
          'body.disabled: a key cannot disable itself; disable it with another management key',
        );
      const changes: Partial<KeyRow> = { updated_at: clock.now().toISOString() };
      if (input.name !== undefined) changes.name = input.name;
      if (input.disabled !== undefined) changes.disabled = input.disabled ? 1 : 0;
      if (input.limit !== undefined) changes.limit_nanos = limitNanosOf(input.limit);
      if (input.limit_reset !== undefined) changes.limit_reset = input.limit_reset;
      if (input.include_byok_in_limit !== undefined)
        changes.include_byok_in_limit = input.include_byok_in_limit ? 1 : 0;
      const row = await keys.update(hash, changes);
      if (!row) throw notFound('API key not found');
      await cache.invalidate(hash);
      return recordOf(row);
    },

    async delete(hash: string, caller?: Principal): Promise<void> {
      if (caller) await reachableKey(hash, caller);
      if (caller?.keyHash === hash)
        throw new AppError(
          'conflict',
          'A key cannot delete itself; delete it with another management key (`switchyard keys create --management` makes one)',
        );
      if (!(await keys.delete(hash))) throw notFound('API key not found');
      await cache.invalidate(hash);
    },

    /** Adds spend to a key (generations call this in a later issue; tests call it now). */
    async recordUsage(
      hash: string,
      amount: { usageNanos: number; byokNanos: number; at?: Date },
    ): Promise<void> {
      const at = amount.at ?? clock.now();
      await keys.addUsage({
        hash,
        day: utcDay(at),
        usageNanos: amount.usageNanos,
        byokNanos: amount.byokNanos,
      });
      cache.addUsage(hash, { ...amount, at });
    },

    /** `GET /key`: the calling key as seen from its cached entry, without a database round trip. */
    current(entry: { row: KeyRow; usage: Parameters<typeof toKeyRecord>[1] }) {
      const now = clock.now();
      const record = toKeyRecord(entry.row, entry.usage, now);
      return {
        label: record.label,
        name: record.name,
        hash: record.hash,
        limit: record.limit,
        limit_remaining: record.limit_remaining,
        limit_reset: record.limit_reset,
        include_byok_in_limit: record.include_byok_in_limit,
        usage: record.usage,
        usage_daily: record.usage_daily,
        usage_weekly: record.usage_weekly,
        usage_monthly: record.usage_monthly,
        byok_usage: record.byok_usage,
        byok_usage_daily: record.byok_usage_daily,
        byok_usage_weekly: record.byok_usage_weekly,
        byok_usage_monthly: record.byok_usage_monthly,
        is_free_tier: record.usage === 0,
        is_management_key: entry.row.is_management === 1,
        is_provisioning_key: entry.row.is_management === 1,
        creator_user_id: record.creator_user_id,
        expires_at: record.expires_at,
        workspace_id: record.workspace_id,
      };
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
