import { AppError, invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { isUuid, newId } from '../../platform/ids.js';
import type { KeyCache } from '../keys/key-cache.js';
import { isUniqueViolation } from './unique-violation.js';
import { publishPolicyChange, type WorkspaceAccess } from './workspace-access.js';
import { toWorkspaceRecord, type WorkspaceRecord } from './workspace-record.js';
import type { WorkspaceRepository, WorkspaceRow } from './workspace-repository.js';

/** Body of `POST /workspaces` and `PATCH /workspaces/{id}` (all optional on PATCH). */
export interface WorkspaceInput {
  name?: string;
  slug?: string;
  description?: string | null;
  default_text_model?: string | null;
  default_image_model?: string | null;
  default_provider_sort?: string | null;
  is_observability_broadcast_enabled?: boolean;
  is_observability_io_logging_enabled?: boolean;
  io_logging_sampling_rate?: number;
  io_logging_api_key_ids?: string[] | null;
  is_data_discount_logging_enabled?: boolean;
}

const slugTaken = (slug: string) =>
  new AppError('conflict', `A workspace with slug "${slug}" already exists`);

/** The pattern lets a UUID through; refusing it keeps `/workspaces/{id}` unambiguous. */
function checkSlug(slug: string | undefined): void {
  if (slug !== undefined && isUuid(slug)) {
    throw invalidRequest(
      'Invalid request parameters: body.slug must not be shaped like a UUID (a workspace is addressed by its id or its slug, so a slug may never look like an id)',
    );
  }
}

const flag = (value: boolean | undefined) => (value === undefined ? undefined : value ? 1 : 0);

/** The columns a create or update sets: only supplied fields, nulls stored as empty text. */
function columnsOf(input: WorkspaceInput): Partial<WorkspaceRow> {
  const columns: Partial<WorkspaceRow> = {
    name: input.name,
    slug: input.slug,
    description: input.description === null ? '' : input.description,
    default_text_model: input.default_text_model === null ? '' : input.default_text_model,
    default_image_model: input.default_image_model === null ? '' : input.default_image_model,
    default_provider_sort: input.default_provider_sort === null ? '' : input.default_provider_sort,
    is_observability_broadcast_enabled: flag(input.is_observability_broadcast_enabled),
    is_observability_io_logging_enabled: flag(input.is_observability_io_logging_enabled),
    io_logging_sampling_rate: input.io_logging_sampling_rate,
    io_logging_api_key_ids:
      input.io_logging_api_key_ids === undefined
        ? undefined
        : input.io_logging_api_key_ids === null
          ? null
          : JSON.stringify([...new Set(input.io_logging_api_key_ids)]),
    is_data_discount_logging_enabled: flag(input.is_data_discount_logging_enabled),
  };
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
}

/** Workspaces (spec 2.6, 4.12; reference §5): lookup by id or slug, create, update, delete. */
export function createWorkspaceService(options: {
  workspaces: WorkspaceRepository;
  access: WorkspaceAccess;
  cache: KeyCache;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { workspaces, access, cache, bus, clock } = options;

  /** A workspace by UUID (any case) or slug, if the caller may reach it; otherwise 404. */
  async function resolve(idOrSlug: string, principal: Principal): Promise<WorkspaceRow> {
    const row = isUuid(idOrSlug)
      ? await workspaces.findById(idOrSlug.toLowerCase())
      : await workspaces.findBySlug(idOrSlug);
    if (!row || !(await access.canAccess(principal, row.id))) throw notFound('Workspace not found');
    return row;
  }

  async function ensureSlugFree(slug: string | undefined, ownId?: string): Promise<void> {
    if (slug === undefined) return;
    const holder = await workspaces.findBySlug(slug);
    if (holder && holder.id !== ownId) throw slugTaken(slug);
  }

  /** A concurrent request may take the slug between the check and the write. */
  async function writing<T>(slug: string | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (slug !== undefined && isUniqueViolation(error)) throw slugTaken(slug);
      throw error;
    }
  }

  return {
    resolve,

    get: async (idOrSlug: string, principal: Principal): Promise<WorkspaceRecord> =>
      toWorkspaceRecord(await resolve(idOrSlug, principal)),

    async list(principal: Principal, page: { offset: number; limit: number }) {
      if (await access.isOrganizationKey(principal)) {
        const [rows, total] = await Promise.all([workspaces.list(page), workspaces.count()]);
        return { data: rows.map(toWorkspaceRecord), total_count: total };
      }
      const rows = await workspaces.list({ ...page, onlyId: principal.workspaceId });
      return { data: rows.map(toWorkspaceRecord), total_count: 1 };
    },

    async create(input: WorkspaceInput & { name: string; slug: string }, principal: Principal) {
      if (!(await access.isOrganizationKey(principal))) {
        throw new AppError(
          'permission_denied',
          'Only organization management keys (management keys of the default workspace) can create workspaces',
        );
      }
      checkSlug(input.slug);
      await ensureSlugFree(input.slug);
      const at = clock.now().toISOString();
      const row: WorkspaceRow = {
        id: newId(),
        name: input.name,
        slug: input.slug,
        description: '',
        // No user accounts here: the creating key's user when it names one, else the key itself.
        created_by: principal.key.row.creator_user_id ?? principal.keyHash,
        default_text_model: '',
        default_image_model: '',
        default_provider_sort: '',
        io_logging_api_key_ids: null,
        io_logging_sampling_rate: 1,
        is_data_discount_logging_enabled: 0,
        is_observability_broadcast_enabled: 0,
        is_observability_io_logging_enabled: 0,
        include_byok_in_budgets: 0,
        is_default: 0,
        created_at: at,
        updated_at: at,
        ...columnsOf(input),
      };
      await writing(input.slug, () => workspaces.insert(row));
      return toWorkspaceRecord(row);
    },

    async update(idOrSlug: string, input: WorkspaceInput, principal: Principal): Promise<WorkspaceRecord> {
      const current = await resolve(idOrSlug, principal);
      checkSlug(input.slug);
      // The default workspace is known as `default` everywhere (docs, CLI, clients); renaming it would
      // let another workspace take that slug and be mistaken for it.
      if (current.is_default === 1 && input.slug !== undefined && input.slug !== current.slug) {
        throw invalidRequest(
          'Invalid request parameters: body.slug of the default workspace cannot be changed',
        );
      }
      await ensureSlugFree(input.slug, current.id);
      const changes = { ...columnsOf(input), updated_at: clock.now().toISOString() };
      const row = await writing(input.slug, () => workspaces.update(current.id, changes));
      if (!row) throw notFound('Workspace not found');
      await publishPolicyChange(bus, row.id);
      return toWorkspaceRecord(row);
    },

    async delete(idOrSlug: string, principal: Principal): Promise<void> {
      const current = await resolve(idOrSlug, principal);
      const result = await workspaces.delete(current.id);
      if (result.outcome === 'not_found') throw notFound('Workspace not found');
      if (result.outcome === 'default') {
        throw invalidRequest('Invalid request parameters: the default workspace cannot be deleted');
      }
      if (result.outcome === 'active_keys') {
        const keys = result.count === 1 ? '1 active API key' : `${result.count} active API keys`;
        throw invalidRequest(
          `Invalid request parameters: the workspace still has ${keys}; disable or delete them before deleting the workspace`,
        );
      }
      // The deleted keys were disabled, but a cached entry would still name a workspace that is gone.
      for (const hash of result.keyHashes) await cache.invalidate(hash);
      await publishPolicyChange(bus, current.id);
    },
  };
}

export type WorkspaceService = ReturnType<typeof createWorkspaceService>;
