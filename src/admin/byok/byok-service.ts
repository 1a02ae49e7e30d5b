import type { Catalog } from '../../catalog/catalog.js';
import { invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { Storage } from '../../storage/database.js';
import { createWorkspaceAccess, publishPolicyChange } from '../workspaces/workspace-access.js';
import { createWorkspaceRepository } from '../workspaces/workspace-repository.js';
import { type ByokRecord, type ByokRow, toByokRecord, writeListColumn } from './byok-record.js';
import { createByokRepository } from './byok-repository.js';
import { checkSecret, maskSecret, resolveModels, resolveProvider } from './byok-rules.js';

type AllowList = string[] | null;

export interface UpdateByokInput {
  provider?: string;
  key?: string;
  name?: string;
  disabled?: boolean;
  is_fallback?: boolean;
  sort_order?: number;
  allowed_api_key_hashes?: AllowList;
  allowed_models?: AllowList;
  allowed_user_ids?: AllowList;
}

export interface CreateByokInput extends UpdateByokInput {
  provider: string;
  key: string;
  workspace_id?: string;
}

export const BYOK_DEFAULT_PAGE_SIZE = 100;

const notFoundCredential = () => notFound('BYOK credential not found');
const flag = (value: boolean | undefined) => (value === undefined ? undefined : value ? 1 : 0);

/**
 * BYOK credentials (spec 2.10, 4.13): provider secrets sealed with the secret box, shown only as a
 * label. A key reaches the credentials of its own workspace; a management key of the default
 * workspace reaches every workspace's. Every change tells the gateway's policy cache to reload.
 */
export function createByokService(options: {
  storage: Storage;
  catalog: Catalog;
  secretBox: SecretBox;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { catalog, secretBox, bus, clock } = options;
  const credentials = createByokRepository(options.storage);
  const workspaces = createWorkspaceRepository(options.storage);
  const access = createWorkspaceAccess(workspaces);

  const targetWorkspace = access.targetWorkspace;

  async function reachable(principal: Principal, id: string): Promise<ByokRow> {
    const row = await credentials.findById(id.toLowerCase());
    if (!row || !(await access.canAccess(principal, row.workspace_id))) throw notFoundCredential();
    return row;
  }

  async function checkKeyHashes(workspaceId: string, hashes: AllowList | undefined): Promise<void> {
    if (!hashes) return;
    const known = await credentials.keyHashesOf(workspaceId, hashes);
    const index = hashes.findIndex((hash) => !known.has(hash));
    // The same words for an unknown key and a key of another workspace.
    if (index >= 0) {
      throw invalidRequest(
        `Invalid request parameters: body.allowed_api_key_hashes.${index} names no API key of this workspace`,
      );
    }
  }

  /**
   * The columns an input sets, validated; only supplied fields. A PATCH whose `key` is the stored
   * key's own label (a record read with GET and sent back whole) keeps the stored key, as masked
   * values of a destination's config are ignored; any other masked label is refused.
   */
  async function columnsOf(
    given: UpdateByokInput,
    workspaceId: string,
    current?: { label: string; provider: string },
  ): Promise<Partial<ByokRow>> {
    const input = current !== undefined && given.key === current.label ? { ...given, key: undefined } : given;
    const provider = input.provider === undefined ? undefined : resolveProvider(catalog, input.provider);
    // A key is issued by one provider: it is never sent to another one.
    if (
      current !== undefined &&
      provider !== undefined &&
      provider.slug !== current.provider &&
      input.key === undefined
    ) {
      throw invalidRequest(
        'Invalid request parameters: body.key must be given again when body.provider changes (a stored key is never sent to another provider)',
      );
    }
    if (input.key !== undefined) checkSecret(input.key);
    await checkKeyHashes(workspaceId, input.allowed_api_key_hashes);
    const models =
      input.allowed_models === undefined || input.allowed_models === null
        ? input.allowed_models
        : resolveModels(catalog, input.allowed_models);
    const columns: Partial<ByokRow> = {
      provider: provider?.slug,
      name: input.name,
      label: input.key === undefined ? undefined : maskSecret(input.key),
      secret_ciphertext: input.key === undefined ? undefined : secretBox.seal(input.key),
      disabled: flag(input.disabled),
      is_fallback: flag(input.is_fallback),
      sort_order: input.sort_order,
      allowed_api_key_hashes:
        input.allowed_api_key_hashes === undefined
          ? undefined
          : writeListColumn(input.allowed_api_key_hashes),
      allowed_models: models === undefined ? undefined : writeListColumn(models),
      allowed_user_ids:
        input.allowed_user_ids === undefined ? undefined : writeListColumn(input.allowed_user_ids),
    };
    return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
  }

  return {
    async list(
      principal: Principal,
      query: { workspace_id?: string; offset?: number; limit?: number },
    ): Promise<{ data: ByokRecord[]; total_count: number }> {
      const workspaceId = await targetWorkspace(principal, query.workspace_id, 'querystring.workspace_id');
      const [rows, total] = await Promise.all([
        credentials.list({
          workspaceId,
          offset: query.offset ?? 0,
          limit: query.limit ?? BYOK_DEFAULT_PAGE_SIZE,
        }),
        credentials.count(workspaceId),
      ]);
      return { data: rows.map(toByokRecord), total_count: total };
    },

    async get(principal: Principal, id: string): Promise<ByokRecord> {
      return toByokRecord(await reachable(principal, id));
    },

    async create(principal: Principal, input: CreateByokInput): Promise<ByokRecord> {
      const workspaceId = await targetWorkspace(principal, input.workspace_id, 'body.workspace_id');
      const columns = await columnsOf(input, workspaceId);
      const at = clock.now().toISOString();
      const row: ByokRow = {
        id: newId(),
        workspace_id: workspaceId,
        name: input.name ?? resolveProvider(catalog, input.provider).name,
        provider: input.provider,
        label: '',
        secret_ciphertext: '',
        disabled: 0,
        is_fallback: 0,
        sort_order: 0,
        allowed_api_key_hashes: null,
        allowed_models: null,
        allowed_user_ids: null,
        created_at: at,
        updated_at: at,
        ...columns,
      };
      await credentials.insert(row);
      await publishPolicyChange(bus, workspaceId);
      return toByokRecord(row);
    },

    async update(principal: Principal, id: string, input: UpdateByokInput): Promise<ByokRecord> {
      const current = await reachable(principal, id);
      const columns = await columnsOf(input, current.workspace_id, current);
      const updated = await credentials.update(current.id, {
        ...columns,
        updated_at: clock.now().toISOString(),
      });
      // Deleted by a concurrent request between the read and the write.
      if (!updated) throw notFoundCredential();
      await publishPolicyChange(bus, current.workspace_id);
      return toByokRecord(updated);
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const current = await reachable(principal, id);
      if (!(await credentials.delete(current.id))) throw notFoundCredential();
      await publishPolicyChange(bus, current.workspace_id);
    },
  };
}

export type ByokService = ReturnType<typeof createByokService>;
