import { DeliveryError, type DestinationType } from '../../broadcast/destination-type.js';
import { destinationType } from '../../broadcast/destination-types.js';
import type { ExporterHttp } from '../../broadcast/exporter-http.js';
import { AppError, invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { Storage } from '../../storage/database.js';
import { createPatternChecker, type PatternChecker } from '../guardrails/regex-safety.js';
import { createWorkspaceAccess, publishPolicyChange } from '../workspaces/workspace-access.js';
import { createWorkspaceRepository } from '../workspaces/workspace-repository.js';
import {
  applyDefaults,
  checkConfig,
  checkConfigDepth,
  type DestinationConfig,
  keptSecrets,
  maskConfig,
  mergeConfig,
  openDestinationConfig,
  originsOf,
  plainConfigHoldsCredentials,
  sameConfig,
  scrubSecrets,
  sealConfig,
} from './destination-config.js';
import {
  type DestinationRecord,
  type DestinationRegion,
  type DestinationRow,
  toDestinationRecord,
} from './destination-record.js';
import {
  createDestinationRepository,
  type DeliveryRow,
  type DeliveryStatus,
  type DestinationChanges,
} from './destination-repository.js';
import { type FilterRulesInput, normalizeFilterRules } from './filter-rules.js';

/** Spec 4.5 and 8: at most this many (not deleted) destinations of one type per workspace. */
export const MAX_DESTINATIONS_PER_TYPE = 5;
export const DESTINATION_DEFAULT_PAGE_SIZE = 100;
export const MAX_NAME_LENGTH = 255;
/** The longest a connection test may take, whatever the exporter does (its HTTP client has its own timeouts). */
const CONNECTION_TEST_TIMEOUT_MS = 20_000;

export interface UpdateDestinationInput {
  name?: string;
  config?: DestinationConfig;
  enabled?: boolean;
  api_key_hashes?: string[] | null;
  broadcast_generation_cost?: boolean;
  broadcast_generation_identity?: boolean;
  broadcast_generation_request_context?: boolean;
  filter_rules?: FilterRulesInput | null;
  privacy_mode?: boolean;
  regions?: Array<DestinationRegion | 'eu'>;
  sampling_rate?: number;
}

export interface CreateDestinationInput extends UpdateDestinationInput {
  type: string;
  name: string;
  config: DestinationConfig;
  workspace_id?: string;
}

export interface Page {
  offset?: number;
  limit?: number;
}

export type ConnectionTestResult = { ok: true } | { ok: false; error: string };

const notFoundDestination = () => notFound('Observability destination not found');
const flag = (value: boolean | undefined) => (value === undefined ? undefined : value ? 1 : 0);

/** `eu` is the input alias of `europe`; the first occurrence of each region is kept. */
const normalizeRegions = (regions: ReadonlyArray<DestinationRegion | 'eu'>): DestinationRegion[] => [
  ...new Set(regions.map((region) => (region === 'eu' ? 'europe' : region))),
];

function normalizeName(name: string): string {
  const trimmed = name.trim();
  const length = Array.from(trimmed).length;
  if (length === 0 || length > MAX_NAME_LENGTH) {
    throw invalidRequest(
      `Invalid request parameters: body.name must have 1 to ${MAX_NAME_LENGTH} characters once trimmed`,
    );
  }
  return trimmed;
}

/**
 * Observability destinations (spec 2.4, 3, 4.5; reference §3): where copies of generation traffic
 * go. Configs are validated by their type (broadcast/destination-types.ts); secret fields and custom
 * header values are sealed with the secret box and only ever returned masked. A key reaches the
 * destinations of its own workspace; a management key of the default workspace reaches every
 * workspace's. Every change tells the gateway's policy cache to reload the workspace.
 */
export function createDestinationService(options: {
  storage: Storage;
  secretBox: SecretBox;
  bus: ChangeBus;
  clock: Clock;
  http: ExporterHttp;
  /** `broadcast.origin_overrides` of the config, handed to connection tests as the worker does. */
  originOverrides?: Readonly<Record<string, string>>;
  patterns?: PatternChecker;
}) {
  const { secretBox, bus, clock, http } = options;
  const destinations = createDestinationRepository(options.storage);
  const workspaces = createWorkspaceRepository(options.storage);
  const access = createWorkspaceAccess(workspaces);
  const patterns = options.patterns ?? createPatternChecker();

  function typeOf(row: DestinationRow): DestinationType<object> {
    const type = destinationType(row.type);
    if (!type) throw new Error(`observability destination ${row.id} has an unknown type "${row.type}"`);
    return type;
  }

  function recordOf(row: DestinationRow): DestinationRecord {
    const type = typeOf(row);
    return toDestinationRecord(row, maskConfig(type, openDestinationConfig(row, secretBox)));
  }

  const targetWorkspace = access.targetWorkspace;

  /** A live destination within the caller's reach; anything else is the same 404. */
  async function reachable(principal: Principal, id: string): Promise<DestinationRow> {
    const row = await destinations.findById(id.toLowerCase());
    if (!row || !(await access.canAccess(principal, row.workspace_id))) throw notFoundDestination();
    return row;
  }

  /** Runs the type's connection test; the receiver's refusal as text, or null when it passed. */
  async function connectionTest(
    type: DestinationType<object>,
    config: DestinationConfig,
  ): Promise<string | null> {
    try {
      await type.testConnection({
        config,
        http,
        signal: AbortSignal.timeout(CONNECTION_TEST_TIMEOUT_MS),
        now: clock.now(),
        originOverride: options.originOverrides?.[type.type],
      });
      return null;
    } catch (error) {
      // Anything else is a fault of the exporter, not an answer of the receiver: a 500.
      if (error instanceof DeliveryError) return scrubSecrets(error.message, type, config);
      throw error;
    }
  }

  /** Test on save (reference §3.3): a config the receiver refuses is not stored. */
  async function testBeforeSaving(type: DestinationType<object>, config: DestinationConfig): Promise<void> {
    if (!type.testOnSave) return;
    const failure = await connectionTest(type, config);
    if (failure !== null) {
      throw invalidRequest(`Invalid request parameters: body.config failed the connection test: ${failure}`);
    }
  }

  /** The columns an input sets besides the config, validated; only supplied fields. */
  async function columnsOf(input: UpdateDestinationInput): Promise<DestinationChanges> {
    const rules =
      input.filter_rules === undefined || input.filter_rules === null
        ? input.filter_rules
        : await normalizeFilterRules(input.filter_rules, patterns, 'body.filter_rules');
    const columns: DestinationChanges = {
      name: input.name === undefined ? undefined : normalizeName(input.name),
      enabled: flag(input.enabled),
      api_key_hashes:
        input.api_key_hashes === undefined
          ? undefined
          : input.api_key_hashes === null
            ? null
            : JSON.stringify([...new Set(input.api_key_hashes)]),
      broadcast_generation_cost: flag(input.broadcast_generation_cost),
      broadcast_generation_identity: flag(input.broadcast_generation_identity),
      broadcast_generation_request_context: flag(input.broadcast_generation_request_context),
      filter_rules: rules === undefined ? undefined : rules === null ? null : JSON.stringify(rules),
      privacy_mode: flag(input.privacy_mode),
      regions: input.regions === undefined ? undefined : JSON.stringify(normalizeRegions(input.regions)),
      sampling_rate: input.sampling_rate,
    };
    return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
  }

  const limitReached = (type: string) =>
    new AppError(
      'conflict',
      `Resource conflict: a workspace may have at most ${MAX_DESTINATIONS_PER_TYPE} destinations of type ${type}; delete one to add another`,
    );

  return {
    /**
     * Seals the credential-carrying URLs (query values, a userinfo password) that rows saved before
     * such URLs were sealed keep in the plain config column; the server runs it once at start, so
     * a copy of the database stops giving them away. What an exporter is given does not change.
     * A row that cannot be opened (another master key) is left as it is. Returns the rows changed.
     */
    async resealStoredUrls(): Promise<number> {
      let changed = 0;
      for (const row of await destinations.everyRow()) {
        if (!plainConfigHoldsCredentials(row)) continue;
        const type = destinationType(row.type);
        if (!type) continue;
        let config: Record<string, unknown>;
        try {
          config = openDestinationConfig(row, secretBox);
        } catch {
          continue;
        }
        const columns = sealConfig(type, config as DestinationConfig, secretBox);
        // One row that cannot be written (locked by a concurrent PATCH, say) does not stop the rest.
        if (await destinations.replaceConfigColumns(row.id, columns, row).catch(() => false)) changed += 1;
      }
      return changed;
    },

    async list(
      principal: Principal,
      query: Page & { workspace_id?: string },
    ): Promise<{ data: DestinationRecord[]; total_count: number }> {
      const workspaceId = await targetWorkspace(principal, query.workspace_id, 'querystring.workspace_id');
      const [rows, total] = await Promise.all([
        destinations.list({
          workspaceId,
          offset: query.offset ?? 0,
          limit: query.limit ?? DESTINATION_DEFAULT_PAGE_SIZE,
        }),
        destinations.count(workspaceId),
      ]);
      return { data: rows.map(recordOf), total_count: total };
    },

    async get(principal: Principal, id: string): Promise<DestinationRecord> {
      return recordOf(await reachable(principal, id));
    },

    async create(principal: Principal, input: CreateDestinationInput): Promise<DestinationRecord> {
      const type = destinationType(input.type);
      // The body schema lists the types already; this keeps the service safe on its own.
      if (!type) throw invalidRequest('Invalid request parameters: body.type is not a destination type');
      const workspaceId = await targetWorkspace(principal, input.workspace_id, 'body.workspace_id');
      const columns = await columnsOf(input);
      const config = applyDefaults(type, input.config);
      checkConfig({ type, config, http, path: 'body.config' });
      // A cheap early answer before the connection test; the insert checks again, race-free.
      if ((await destinations.countOfType(workspaceId, type.type)) >= MAX_DESTINATIONS_PER_TYPE)
        throw limitReached(type.type);
      await testBeforeSaving(type, config);
      const at = clock.now().toISOString();
      const row: DestinationRow = {
        id: newId(),
        workspace_id: workspaceId,
        name: normalizeName(input.name),
        type: type.type,
        enabled: 1,
        api_key_hashes: null,
        broadcast_generation_cost: 0,
        broadcast_generation_identity: 0,
        broadcast_generation_request_context: 0,
        filter_rules: null,
        privacy_mode: 0,
        regions: JSON.stringify(['global']),
        sampling_rate: 1,
        ...columns,
        ...sealConfig(type, config, secretBox),
        created_at: at,
        updated_at: at,
        deleted_at: null,
      };
      const outcome = await destinations.insertWithinLimit(row, MAX_DESTINATIONS_PER_TYPE);
      if (outcome === 'limit_reached') throw limitReached(type.type);
      if (outcome === 'no_workspace') throw notFound('Workspace not found');
      await publishPolicyChange(bus, workspaceId);
      return toDestinationRecord(row, maskConfig(type, config));
    },

    /** Spec 4.5's five PATCH rules; a config change of a test-on-save type is tested first. */
    async update(
      principal: Principal,
      id: string,
      input: UpdateDestinationInput,
    ): Promise<DestinationRecord> {
      const current = await reachable(principal, id);
      const type = typeOf(current);
      const columns = await columnsOf(input);
      let config = openDestinationConfig(current, secretBox);
      let guard: Pick<DestinationRow, 'config' | 'secrets_ciphertext'> | undefined;
      if (input.config !== undefined) {
        checkConfigDepth(input.config, 'body.config');
        const merged = mergeConfig(type, config, input.config);
        if (!sameConfig(merged, config)) {
          checkConfig({ type, config: merged, http, path: 'body.config' });
          // Stored secrets never follow a destination to a new address unless given again: a key that
          // may edit the destination must not be able to send its credentials somewhere it reads.
          const override = options.originOverrides?.[type.type];
          if (originsOf(type, merged, override).join(' ') !== originsOf(type, config, override).join(' ')) {
            const kept = keptSecrets(type, config, input.config);
            if (kept.length > 0) {
              throw invalidRequest(
                `Invalid request parameters: body.config.${kept[0]} must be given again when the destination's address changes (stored secrets are not sent to a new address)`,
              );
            }
          }
          await testBeforeSaving(type, merged);
          Object.assign(columns, sealConfig(type, merged, secretBox));
          guard = { config: current.config, secrets_ciphertext: current.secrets_ciphertext };
          config = merged;
        }
      }
      const updated = await destinations.update(
        current.id,
        { ...columns, updated_at: clock.now().toISOString() },
        guard,
      );
      if (!updated) {
        if (guard && (await destinations.findById(current.id))) {
          throw new AppError(
            'conflict',
            "Resource conflict, try again later: the destination's config changed while this request ran",
          );
        }
        throw notFoundDestination();
      }
      await publishPolicyChange(bus, current.workspace_id);
      return toDestinationRecord(updated, maskConfig(type, config));
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const current = await reachable(principal, id);
      if (!(await destinations.softDelete(current.id, clock.now().toISOString())))
        throw notFoundDestination();
      await publishPolicyChange(bus, current.workspace_id);
    },

    /** The type's connection test with the stored config; a refusal is a result, not an error. */
    async test(principal: Principal, id: string): Promise<ConnectionTestResult> {
      const current = await reachable(principal, id);
      const failure = await connectionTest(typeOf(current), openDestinationConfig(current, secretBox));
      return failure === null ? { ok: true } : { ok: false, error: failure };
    },

    async deliveries(
      principal: Principal,
      id: string,
      query: Page & { status?: DeliveryStatus },
    ): Promise<{ data: DeliveryRow[]; total_count: number }> {
      const current = await reachable(principal, id);
      const status = query.status ?? 'dead';
      const [rows, total] = await Promise.all([
        destinations.listDeliveries({
          destinationId: current.id,
          status,
          offset: query.offset ?? 0,
          limit: query.limit ?? DESTINATION_DEFAULT_PAGE_SIZE,
        }),
        destinations.countDeliveries(current.id, status),
      ]);
      return { data: rows, total_count: total };
    },

    /** Dead letters back to the queue, due now; the worker picks them up on its next round. */
    async retryDeliveries(principal: Principal, id: string): Promise<{ requeued: number }> {
      const current = await reachable(principal, id);
      return { requeued: await destinations.requeueDead(current.id, clock.now().toISOString()) };
    },
  };
}

export type DestinationService = ReturnType<typeof createDestinationService>;
