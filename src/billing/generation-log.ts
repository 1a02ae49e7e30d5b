import { type OutboxSources, rowsOfNewRecords } from '../broadcast/outbox-build.js';
import { type Clock, systemClock } from '../platform/clock.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import { OUTBOX_BUILDER_UNAVAILABLE, type StoredOutboxRow } from '../storage/sqlite-thread.js';
import { createGenerationRepository, type GenerationRecordRow } from './generation-repository.js';

export type { GenerationRecordRow };
export type GenerationApiType = GenerationRecordRow['api_type'];
export type GenerationStatus = GenerationRecordRow['status'];

/**
 * One upstream call made for a generation, in the order they were tried (failover keeps every one).
 * Stored as given, in the record's `attempts` JSON.
 */
export interface GenerationAttempt {
  /** Provider slug, e.g. `openai`. */
  provider: string;
  /** Provider display name, e.g. `OpenAI`; the route falls back to the slug. */
  provider_name?: string;
  /** The catalogue model id tried. */
  model: string;
  endpoint_id: string | null;
  /** The HTTP status the upstream answered; null when none arrived (timeout, connection refused). */
  status: number | null;
  /** Spec 2.7 `error_type` of a failed attempt; null when it succeeded. */
  error_type: string | null;
  latency_ms: number;
}

/**
 * What the request path knows when a generation ends. Field names are the table's; flags are
 * booleans and JSON fields objects here, and `record` converts them to 0/1 and text.
 */
export interface GenerationRecordInput {
  /** `gen-…`, the id sent in `X-Generation-Id`. */
  id: string;
  /** ISO 8601: when the request arrived. Its UTC day is the day the spend is billed to. */
  created_at: string;
  key_hash: string;
  workspace_id: string;
  api_type: GenerationApiType;
  /** The model the client named (the first of `models` when it sent a list). */
  requested_model: string | null;
  /** The catalogue id that answered; null when nothing answered. */
  model: string | null;
  provider_slug: string | null;
  provider_name: string | null;
  endpoint_id: string | null;
  /** The upstream's own response id. */
  upstream_id: string | null;
  streamed: boolean;
  cancelled: boolean;
  is_byok: boolean;
  status: GenerationStatus;
  /** The HTTP status the client received. */
  http_status: number;
  error_type: string | null;
  error_message: string | null;
  /** The canonical finish reason (spec/finish-reason.ts: stop, length, tool-calls, content-filter, error, other). */
  finish_reason: string | null;
  native_finish_reason: string | null;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  /** Output tokens of generated images (a part of `tokens_completion`); absent counts 0. */
  tokens_completion_images?: number;
  /** The whole cost; billed to credits, or to BYOK usage when `is_byok`. */
  cost_nanos: number;
  input_cost_nanos: number;
  output_cost_nanos: number;
  /** Request start to end. */
  latency_ms: number;
  /** Request start to the first output; null when there was none. */
  first_token_ms: number | null;
  /** Upstream dispatch to the end of the upstream body; null when no upstream was called. */
  generation_time_ms: number | null;
  /** The request's end-user `user`. */
  user_id: string | null;
  session_id: string | null;
  metadata: Record<string, unknown> | null;
  trace: Record<string, unknown> | null;
  /** The `HTTP-Referer` header. */
  app_referer: string | null;
  /** The `X-Title` header. */
  app_title: string | null;
  attempts: readonly GenerationAttempt[];
  /** The key's creator (an organization member); optional, null when the key names none. */
  member_user_id?: string | null;
}

/** The two levels the log speaks at; a pino logger fits. */
export interface GenerationLogger {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

/**
 * Builds a generation's broadcast outbox rows. Called by the writer just before the record's group
 * commit, not on the request path, so the event's serialization costs the request nothing.
 */
export interface OutboxRowsBuilder {
  build(): BroadcastOutboxTable[];
  /**
   * What `build` builds from, as plain data: when the group commit runs in a SQLite thread (and the
   * log may build there, `buildAtCommit`), the thread builds the rows from it, so the event is
   * neither built nor serialized on the request thread. Absent: built here.
   */
  sources?: OutboxSources;
  /** The most rows it builds (one per destination that may select the event). */
  rows: number;
  /** Roughly how many bytes the builder keeps alive until it runs (the request's text). */
  weight: number;
}

export interface GenerationLog {
  /**
   * Enqueues a record (and the builder of its broadcast events, stored in the same transaction);
   * never touches the database, never throws.
   */
  record(input: GenerationRecordInput, outbox?: OutboxRowsBuilder): void;
  /** A record by id: the unwritten queue first, then the database. */
  find(id: string): Promise<GenerationRecordRow | null>;
  /** Writes everything queued now; rejects (records kept queued) when the database refuses. */
  flush(): Promise<void>;
  /** Writes everything queued (retrying for up to `closeTimeoutMs`) and refuses later records. */
  close(): Promise<void>;
  /** Records not yet written, including a batch being written. */
  pending(): number;
}

/**
 * Broadcast rows one transaction writes at most when the commit runs on the event loop (about 4 ms
 * of SQLite work for ~3 KB events)…
 */
const MAX_OUTBOX_ROWS_PER_COMMIT = 32;
/**
 * …and when it runs elsewhere (SQLite's commit thread or its own thread, PostgreSQL): nothing waits
 * on a longer transaction there, and a commit that waits for the last one's reply must take what
 * arrived meanwhile, or a busy gateway outruns its commits (at 32 per hop the queue's bound dropped
 * records at saturation).
 */
const MAX_OUTBOX_ROWS_PER_OFF_LOOP_COMMIT = 400;
/**
 * Either way a commit stops at about this many bytes of events (the builders' weight, or the
 * payloads of rows already built): 400 rows of large events would be a hundred megabytes in one
 * transaction, copied once more to the commit's thread.
 */
const MAX_OUTBOX_BYTES_PER_COMMIT = 8 * 1024 * 1024;
/** Building broadcast events yields to the event loop after this long. */
const BUILD_SLICE_MS = 4;
/**
 * What unbuilt broadcast events may keep alive (request texts) while the database is away; beyond
 * it new generations are recorded without their events, so the queue stays bounded in bytes.
 */
export const MAX_QUEUED_BROADCAST_BYTES = 128 * 1024 * 1024;

/** A batch is written once this many records wait… */
const FLUSH_AT_RECORDS = 100;
/** …or this long after the oldest unwritten record arrived, whichever comes first. */
const FLUSH_AFTER_MS = 50;
/** The most records one transaction writes; a backlog after an outage drains in several. */
const MAX_BATCH = 500;
/** The queue's bound while the database is away; beyond it the oldest records are dropped. */
export const MAX_QUEUED_GENERATIONS = 10_000;
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;
/**
 * Free text (error messages, headers) is cut at MAX_TEXT_CHARS and a JSON field longer than
 * MAX_JSON_CHARS is not stored, so a full queue holds megabytes, not gigabytes.
 */
const MAX_TEXT_CHARS = 4_096;
const MAX_JSON_CHARS = 65_536;

/** A batch's broadcast rows: built here, and the sources of those the commit builds. */
interface BatchOutbox {
  rows: BroadcastOutboxTable[];
  sources: OutboxSources[];
  /** The weight of the builders whose sources these are. */
  weight: number;
}

interface Queued {
  row: GenerationRecordRow;
  /**
   * The builder until the first write attempt builds its rows here, then its rows (kept, so a
   * retried batch keeps ids); a builder whose rows the commit builds stays one until written.
   */
  outbox: OutboxRowsBuilder | BroadcastOutboxTable[] | null;
  /** performance.now() when recorded. */
  queuedAt: number;
  /**
   * Set when a commit that was to build this builder's rows failed: the next attempt builds them
   * here, so sources a thread cannot take (or cannot build from) never hold the queue up.
   */
  buildHere?: boolean;
}

/**
 * Generation records written in group commits off the request path (DESIGN: the hot path touches no
 * database synchronously). Each batch is one transaction that also adds the records' spend to
 * `key_usage_daily` and one `usage` row to the credit ledger, so records and billing never disagree.
 * One write at a time; while the database is away records stay queued (bounded) and writes are
 * retried with backoff from 100 ms doubling to 5 s.
 */
export function createGenerationLog(options: {
  storage: Storage;
  logger: GenerationLogger;
  clock?: Clock;
  /** How long `close()` keeps retrying a failing database before giving the records up. */
  closeTimeoutMs?: number;
  /**
   * Runs after a batch that stored broadcast events committed, with the rows built on this thread:
   * the delivery worker sends those it holds the lease of straight away, without reading them back.
   */
  onOutboxWritten?: (rows: readonly BroadcastOutboxTable[]) => void;
  /**
   * Runs after a batch committed with the rows a SQLite thread built from the builders' sources,
   * those leased to a worker, by id: the worker reads them (its own connection, in its thread).
   */
  onOutboxStored?: (rows: readonly StoredOutboxRow[]) => void;
  /**
   * Whether rows may be built where the commit runs (default yes): no, when this thread's delivery
   * worker sends them from the objects built here (`onOutboxWritten`).
   */
  buildAtCommit?: () => boolean;
}): GenerationLog {
  const { logger } = options;
  const clock = options.clock ?? systemClock;
  const closeTimeoutMs = options.closeTimeoutMs ?? 5_000;
  const repository = createGenerationRepository(options.storage);

  let queue: Queued[] = [];
  let inFlight: Queued[] = [];
  /** Every record not yet written (queued or in flight), by id, for `find`. */
  const unwritten = new Map<string, GenerationRecordRow>();
  let writing: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  /** Zero while the database is healthy; otherwise the wait before the next attempt. */
  let retryMs = 0;
  let lastError: unknown = null;
  let dropped = 0;
  /** Bytes kept alive by unbuilt broadcast builders, and how many were refused for the bound. */
  let outboxWeight = 0;
  let droppedBroadcasts = 0;
  /** The SQLite thread could not load the row builder: rows are built here from then on. */
  let builderUnavailable = false;
  let closed = false;
  let closing: Promise<void> | null = null;

  const pending = () => queue.length + inFlight.length;

  const forget = (row: GenerationRecordRow) => {
    if (unwritten.get(row.id) === row) unwritten.delete(row.id);
  };

  function dropOldest(): void {
    const excess = pending() - MAX_QUEUED_GENERATIONS;
    if (excess <= 0) return;
    for (const item of queue.splice(0, excess)) {
      forget(item.row);
      if (item.outbox !== null && !Array.isArray(item.outbox)) outboxWeight -= item.outbox.weight;
    }
    dropped += excess;
  }

  function reportDrops(): void {
    if (droppedBroadcasts > 0) {
      logger.error(
        { dropped: droppedBroadcasts, limit_bytes: MAX_QUEUED_BROADCAST_BYTES },
        'generation log holds too many unwritten broadcast events: later generations were recorded without them',
      );
      droppedBroadcasts = 0;
    }
    if (dropped === 0) return;
    logger.error(
      { dropped, limit: MAX_QUEUED_GENERATIONS },
      'generation log queue full: dropped the oldest unwritten records',
    );
    dropped = 0;
  }

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  function arm(delayMs: number): void {
    clearTimer();
    timer = setTimeout(() => {
      timer = null;
      void writeNext();
    }, delayMs);
    // A pending timer must not keep a finished process alive; close() writes what is left.
    timer.unref();
  }

  /** Arms the next write: at once when a batch is full, else when the oldest record is 50 ms old. */
  function schedule(): void {
    if (closed || writing || retryMs > 0) return;
    const oldest = queue[0];
    if (!oldest) return;
    const due =
      queue.length >= FLUSH_AT_RECORDS
        ? 0
        : Math.max(0, oldest.queuedAt + FLUSH_AFTER_MS - performance.now());
    // A timer already armed waits for the same oldest record; only a full batch brings it forward.
    if (timer && due > 0) return;
    arm(due);
  }

  /** Writes the next batch unless a write is running; the promise settles after it, never rejects. */
  function writeNext(): Promise<void> {
    if (writing) return writing;
    if (queue.length === 0) return Promise.resolve();
    const batch = queue.splice(0, batchLength());
    inFlight = batch;
    reportDrops();
    let outbox: BatchOutbox = { rows: [], sources: [], weight: 0 };
    writing = outboxOf(batch)
      .then((built) => {
        outbox = built;
        return repository.writeBatch(
          batch.map((item) => item.row),
          clock.now(),
          built.rows,
          built.sources,
        );
      })
      .then(
        (commit) => {
          inFlight = [];
          for (const item of batch) forget(item.row);
          retryMs = 0;
          lastError = null;
          // Builders whose rows the commit built: what they kept alive is written now.
          outboxWeight -= outbox.weight;
          for (const failure of commit.unbuilt) {
            logger.error(
              { err: { message: failure.message }, id: failure.id },
              'broadcast events could not be built; not sent',
            );
          }
          // A record stored before (a retry after a commit in doubt) had its events stored then:
          // the rows built now for it were not, and are not handed over.
          const written = rowsOfNewRecords(outbox.rows, commit.skipped);
          if (written.length > 0) options.onOutboxWritten?.(written);
          if (commit.stored.length > 0) options.onOutboxStored?.(commit.stored);
        },
        (error: unknown) => {
          inFlight = [];
          if (outbox.sources.length > 0) {
            for (const item of batch) {
              if (item.outbox !== null && !Array.isArray(item.outbox) && item.outbox.sources)
                item.buildHere = true;
            }
          }
          queue = batch.concat(queue);
          dropOldest();
          const code = (error as { code?: unknown } | null | undefined)?.code;
          if (code === OUTBOX_BUILDER_UNAVAILABLE && !builderUnavailable) {
            // Nothing was written: the batch goes again at once, its rows built here.
            builderUnavailable = true;
            logger.error(
              { err: error },
              'the SQLite thread cannot build broadcast events; they are built on the request thread',
            );
            return;
          }
          retryMs = retryMs === 0 ? FIRST_RETRY_MS : Math.min(retryMs * 2, MAX_RETRY_MS);
          lastError = error;
          logger.warn(
            { err: error, pending: pending(), retry_in_ms: retryMs },
            'generation records not written; kept queued, retrying',
          );
          reportDrops();
        },
      )
      .finally(() => {
        writing = null;
        if (closed) return;
        if (retryMs > 0) arm(retryMs);
        else schedule();
      });
    return writing;
  }

  /**
   * How many queued records the next transaction takes: up to MAX_BATCH, but records carrying
   * broadcast events stop it at about MAX_OUTBOX_ROWS_PER_COMMIT rows on the event loop,
   * MAX_OUTBOX_ROWS_PER_OFF_LOOP_COMMIT elsewhere (rows counted as their destinations until they
   * are built), or MAX_OUTBOX_BYTES_PER_COMMIT bytes: each row is a whole event, and a transaction
   * holds the connection while it runs — with SQLite on the event loop, the event loop too (the rest
   * follows on the next tick).
   */
  function batchLength(): number {
    const maxOutboxRows = repository.commitsOffEventLoop()
      ? MAX_OUTBOX_ROWS_PER_OFF_LOOP_COMMIT
      : MAX_OUTBOX_ROWS_PER_COMMIT;
    let rows = 0;
    let bytes = 0;
    const limit = Math.min(MAX_BATCH, queue.length);
    for (let index = 0; index < limit; index += 1) {
      const outbox = queue[index]?.outbox ?? null;
      if (outbox === null) continue;
      if (Array.isArray(outbox)) {
        rows += outbox.length;
        for (const row of outbox) bytes += row.payload.length;
      } else {
        rows += outbox.rows;
        bytes += outbox.weight;
      }
      if (rows > maxOutboxRows || bytes > MAX_OUTBOX_BYTES_PER_COMMIT) return Math.max(1, index);
    }
    return limit;
  }

  /**
   * The batch's broadcast rows: builders with sources are left to the commit when it runs in a
   * SQLite thread (their sources go with it, and their weight is released once it is written);
   * the others are materialized here, once (a retried batch keeps their ids). A builder that
   * throws loses its events, not the record. Serializing large events takes time, so the work
   * yields to the event loop every few milliseconds rather than holding up requests for a whole
   * batch.
   */
  async function outboxOf(batch: Queued[]): Promise<BatchOutbox> {
    const result: BatchOutbox = { rows: [], sources: [], weight: 0 };
    const atCommit =
      !builderUnavailable && (options.buildAtCommit?.() ?? true) && repository.buildsAtCommit();
    let sliceStart = performance.now();
    for (const item of batch) {
      if (item.outbox === null) continue;
      if (!Array.isArray(item.outbox)) {
        const builder = item.outbox;
        if (atCommit && builder.sources && !item.buildHere) {
          result.sources.push(builder.sources);
          result.weight += builder.weight;
          continue;
        }
        if (performance.now() - sliceStart > BUILD_SLICE_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          sliceStart = performance.now();
        }
        try {
          item.outbox = builder.build();
        } catch (error) {
          logger.error({ err: error, id: item.row.id }, 'broadcast events could not be built; not sent');
          item.outbox = [];
        }
        outboxWeight -= builder.weight;
      }
      for (const row of item.outbox) result.rows.push(row);
    }
    return result;
  }

  async function drainForClose(): Promise<void> {
    const deadline = performance.now() + closeTimeoutMs;
    clearTimer();
    while (pending() > 0) {
      if (writing) {
        await writing;
        continue;
      }
      await writeNext();
      if (retryMs === 0) continue;
      if (performance.now() + retryMs > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
    clearTimer();
    reportDrops();
    if (pending() > 0) {
      logger.error(
        { err: lastError, lost: pending() },
        'generation log closed with records the database did not take; they are lost',
      );
    }
  }

  return {
    record(input, outbox) {
      if (closed) {
        logger.error({ id: input.id }, 'generation recorded after the log closed; not written');
        return;
      }
      let row: GenerationRecordRow;
      try {
        row = toRow(input, logger);
      } catch (error) {
        logger.error({ err: error, id: input.id }, 'generation record is malformed; not written');
        return;
      }
      let events: OutboxRowsBuilder | null = outbox ?? null;
      if (events && outboxWeight + events.weight > MAX_QUEUED_BROADCAST_BYTES) {
        droppedBroadcasts += 1;
        events = null;
      } else if (events) {
        outboxWeight += events.weight;
      }
      queue.push({ row, outbox: events, queuedAt: performance.now() });
      unwritten.set(row.id, row);
      dropOldest();
      schedule();
    },

    async find(id) {
      return unwritten.get(id) ?? repository.findById(id);
    },

    async flush() {
      while (pending() > 0) {
        if (writing) {
          await writing;
          continue;
        }
        clearTimer();
        await writeNext();
        if (retryMs > 0) throw lastError;
      }
    },

    close() {
      if (!closing) {
        closed = true;
        closing = drainForClose();
      }
      return closing;
    },

    pending,
  };
}

/** A non-negative integer that fits a bigint column on both backends (one bad row must not block a batch). */
const count = (value: number): number =>
  Number.isFinite(value) ? Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(value))) : 0;

const optionalCount = (value: number | null): number | null => (value === null ? null : count(value));

/** PostgreSQL refuses NUL in text; upstream error messages are foreign input. */
const text = (value: string | null, maxChars = MAX_TEXT_CHARS): string | null =>
  value === null ? null : value.replaceAll('\u0000', '').slice(0, maxChars);

function json(value: unknown, field: string, logger: GenerationLogger): string | null {
  if (value === null || value === undefined) return null;
  let encoded: string;
  try {
    encoded = JSON.stringify(value);
  } catch (error) {
    logger.warn({ err: error, field }, 'generation field is not JSON; not stored');
    return null;
  }
  if (encoded.length <= MAX_JSON_CHARS) return encoded;
  logger.warn(
    { field, chars: encoded.length, limit: MAX_JSON_CHARS },
    'generation field too large; not stored',
  );
  return null;
}

function toRow(input: GenerationRecordInput, logger: GenerationLogger): GenerationRecordRow {
  return {
    id: input.id,
    // Normalized, so the billing day (its first 10 characters) is the UTC day whatever offset came in.
    created_at: new Date(input.created_at).toISOString(),
    key_hash: input.key_hash,
    workspace_id: input.workspace_id,
    api_type: input.api_type,
    requested_model: text(input.requested_model),
    model: input.model,
    provider_slug: input.provider_slug,
    provider_name: input.provider_name,
    endpoint_id: input.endpoint_id,
    upstream_id: text(input.upstream_id),
    streamed: input.streamed ? 1 : 0,
    cancelled: input.cancelled ? 1 : 0,
    is_byok: input.is_byok ? 1 : 0,
    status: input.status,
    http_status: count(input.http_status),
    error_type: text(input.error_type),
    error_message: text(input.error_message),
    finish_reason: text(input.finish_reason),
    native_finish_reason: text(input.native_finish_reason),
    tokens_prompt: count(input.tokens_prompt),
    tokens_completion: count(input.tokens_completion),
    tokens_cached: count(input.tokens_cached),
    tokens_cache_write: count(input.tokens_cache_write),
    tokens_reasoning: count(input.tokens_reasoning),
    tokens_completion_images: count(input.tokens_completion_images ?? 0),
    cost_nanos: count(input.cost_nanos),
    input_cost_nanos: count(input.input_cost_nanos),
    output_cost_nanos: count(input.output_cost_nanos),
    latency_ms: count(input.latency_ms),
    first_token_ms: optionalCount(input.first_token_ms),
    generation_time_ms: optionalCount(input.generation_time_ms),
    user_id: text(input.user_id),
    session_id: text(input.session_id),
    metadata: json(input.metadata, 'metadata', logger),
    trace: json(input.trace, 'trace', logger),
    app_referer: text(input.app_referer),
    app_title: text(input.app_title),
    // The attempts list is ours and short; it is stored whole.
    attempts: JSON.stringify(input.attempts),
    member_user_id: text(input.member_user_id ?? null),
  };
}
