import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { openDestinationConfig, scrubSecrets } from '../admin/observability/destination-config.js';
import { POLICY_TOPIC } from '../admin/workspaces/workspace-access.js';
import { createInProcessDeliverer, type Deliverer, type StoredItem } from '../broadcast/deliver-batch.js';
import { viewOf } from '../broadcast/destination-rules.js';
import {
  asDeliveryError,
  DeliveryError,
  type DestinationType,
  deliveryErrorFrom,
  type Rejection,
  type SendOutcome,
} from '../broadcast/destination-type.js';
import { destinationType } from '../broadcast/destination-types.js';
import type { ExporterHttp } from '../broadcast/exporter-http.js';
import { leasedRows } from '../broadcast/outbox-build.js';
import { eventOfBuiltRow, payloadToSend, stowPayload } from '../broadcast/outbox-events.js';
import { createFanoutOutbox } from '../broadcast/outbox-fanout.js';
import { createOutboxRepository } from '../broadcast/outbox-repository.js';
import type { Config } from '../config/config-schema.js';
import type { ChangeBus } from '../platform/change-bus.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/secret-box.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable, ObservabilityDestinationTable } from '../storage/database-schema.js';
import type { StoredOutboxRow } from '../storage/sqlite-thread.js';

export interface BroadcastWorkerLogger {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export type Outcome = 'delivered' | 'retried' | 'dead' | 'dropped';

/** How long the worker trusts a destination row it read (enabled, deleted, config). */
const DESTINATION_CACHE_MS = 1_000;

/** Handed-over rows kept in memory at most; more go back to the database to be claimed. */
const MAX_HANDOFF_ROWS = 5_000;

/** A row of its own (or a part already made) as queued: for its own destination. */
const ownEntry = (row: BroadcastOutboxTable): [string, BroadcastOutboxTable] => [row.destination_id, row];

/** No single send runs longer than this (the HTTP client's own timeouts are shorter). */
const SEND_TIMEOUT_MS = 40_000;

/**
 * The delay before attempt `attempts + 1`: exponential from `base` (doubling per attempt, capped at
 * `max`) with equal jitter (half fixed, half random), so retries of many events spread out. A
 * receiver's `Retry-After` wins when it asks for longer.
 */
export function backoffMs(
  attempts: number,
  settings: { base: number; max: number },
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(settings.max, settings.base * 2 ** Math.max(0, attempts - 1));
  const jittered = exponential / 2 + (random() * exponential) / 2;
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * Whether a failure concerns the destination rather than the events sent: it is unreachable, rate
 * limits (429), fails (5xx) or names a time to come back. Its other events then wait too.
 */
function concernsDestination(failure: DeliveryError): boolean {
  return (
    failure.retryable &&
    (failure.status === null ||
      failure.status === 429 ||
      failure.status >= 500 ||
      failure.retryAfterMs !== null)
  );
}

/**
 * Delivers the broadcast outbox. Each instance runs one: it claims due events (a lease per row, so
 * instances on one PostgreSQL database share the work without sending an event twice), groups them
 * by destination, and sends each destination's events in batches of its exporter's size, one batch
 * at a time per destination and up to `concurrency` destinations at once. A failed event is retried
 * with backoff (honouring `Retry-After`) until `max_attempts`, then kept as a dead letter; an event
 * the receiver refuses outright (a 4xx other than 408/425/429) is a dead letter at once. Events of a
 * destination deleted or disabled meanwhile are dropped.
 */
export function createBroadcastWorker(options: {
  storage: Storage;
  secretBox: SecretBox;
  /** Sends in this thread with `http` unless a deliverer (the delivery thread) is given. */
  http: ExporterHttp;
  deliverer?: Deliverer;
  settings: Config['broadcast'];
  clock: Clock;
  logger: BroadcastWorkerLogger;
  registry?: Registry;
  /** Tests name the instance; otherwise a random id. */
  owner?: string;
  /** Destination changes (policy invalidations) drop the worker's cached destination rows at once. */
  bus?: ChangeBus;
  /** Where delivery counts and times go (the worker thread relays them); else registered on `registry`. */
  metrics?: WorkerMetrics;
  /**
   * Told of the rows each claim took from the database, with the lease it took them under (the
   * worker thread relays them, so a thread that dies mid-send has them handed to the next).
   */
  onClaimed?: (rows: StoredOutboxRow[]) => void;
}) {
  const { settings, clock, logger } = options;
  const deliverer = options.deliverer ?? createInProcessDeliverer(options.http);
  const repository = createOutboxRepository(options.storage);
  /** Settles rows, fan-out rows' parts included: every settling statement goes through it. */
  const outbox = createFanoutOutbox(repository);
  const owner = options.owner ?? `worker-${randomUUID()}`;
  const metrics =
    options.metrics ?? (options.registry ? registerWorkerMetrics(options.registry, options.storage) : null);
  /** One send's limit: within half a lease, so a send never outlives the lease it started under. */
  const sendTimeoutMs = Math.min(SEND_TIMEOUT_MS, settings.lease_ms / 2);

  /** Destinations being delivered to, with the rows this worker holds for them. */
  const busy = new Map<string, Promise<void>>();
  /**
   * Destinations that asked to be left alone (429 / 503 / Retry-After, or unreachable): not claimed
   * for until this time (epoch ms), so a rate-limit episode does not burn every event's attempts.
   */
  const pausedUntil = new Map<string, number>();
  /** Rows claimed and not yet settled: released on stop. */
  const held = new Set<string>();
  /**
   * Rows this instance stored already leased to itself (the generation log hands them over after
   * the commit), by destination: delivered from memory, without a claim query. A destination's
   * queue is sent once its first row has waited `batch_linger_ms` (or it holds a claim's worth), so
   * the events of many commits go in one batch. A fan-out row waits in each of its destinations'
   * queues as itself: its part for the destination is made when the queue is sent
   * (`outbox.partFor`), so the row is held as one object rather than as one per destination.
   */
  const handoff = new Map<string, { rows: BroadcastOutboxTable[]; since: number }>();
  let handoffSize = 0;
  /** Set while `drain()` runs: queues are sent without lingering. */
  let flushing = false;
  /** When the database was last asked for due rows; asked at most once per poll unless it had more. */
  let lastDatabaseClaim = 0;
  let databaseBacklog = true;
  /**
   * Destinations delivering rows claimed from the database. A claim that came back short while
   * they were busy (excluded from it) says nothing about their own rows still waiting: when one of
   * them finishes, the database is asked again at once rather than at the next poll.
   */
  const claimedFromDatabase = new Set<string>();
  /**
   * Counts the times a destination delivering database rows finished (and so may have more waiting):
   * a claim in flight meanwhile was made while it was excluded, so its short answer must not clear
   * the backlog that finish announced.
   */
  let backlogSignals = 0;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  /** When `timer` fires (epoch ms of the clock). */
  let timerDue = 0;
  let looping: Promise<void> | null = null;
  let wakeRequested = false;
  let stopped = false;
  let started = false;
  /** Rows stored for this worker being read back (`acceptStored`), one read after another. */
  let reading: Promise<void> = Promise.resolve();
  let lastPurge = 0;
  /** A pass failed: no queue is sent before this time (epoch ms), so a failing database is not asked in a spin. */
  let retryAt = 0;
  /** Fan-out rows claimed back while held whose attempt is still to be given back (see `expand`). */
  let toUncount: string[] = [];

  function schedule(delayMs: number): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timerDue = clock.now().getTime() + delayMs;
    timer = setTimeout(() => {
      timer = null;
      void loop();
    }, delayMs);
    timer.unref();
  }

  /** When a hand-off queue can be sent: its first row's linger is over, or it is full. */
  function readyAt(queue: { rows: readonly BroadcastOutboxTable[]; since: number }): number {
    if (flushing || queue.rows.length >= settings.claim_batch) return 0;
    return queue.since + settings.batch_linger_ms;
  }

  /**
   * The next loop: at the next poll, or sooner when a hand-off queue's linger ends first. A queue
   * whose destination is being delivered to or paused does not count (a delivery that ends runs the
   * loop itself; a pause hands the queue to the database), nor does any while every slot is busy.
   */
  function nextDelay(): number {
    const now = clock.now().getTime();
    return Math.min(settings.poll_interval_ms, Math.max(0, firstReady(now) - now));
  }

  /** When the first hand-off queue that could be sent becomes ready (infinity: none). */
  function firstReady(now: number): number {
    let due = Number.POSITIVE_INFINITY;
    if (busy.size >= settings.concurrency) return due;
    for (const [destinationId, queue] of handoff) {
      if (busy.has(destinationId) || (pausedUntil.get(destinationId) ?? 0) > now) continue;
      due = Math.min(due, readyAt(queue));
    }
    // After a failed pass its rows are queued again, ready: not before a poll interval.
    return Math.max(due, retryAt);
  }

  /** Claims and starts deliveries while there is capacity; then waits for a poll or a wake-up. */
  function loop(): Promise<void> {
    if (looping) {
      wakeRequested = true;
      return looping;
    }
    // Started on a later tick, so `looping` is set before the body can finish and clear it.
    const run: Promise<void> = Promise.resolve().then(async () => {
      try {
        do {
          wakeRequested = false;
          while (!stopped && busy.size < settings.concurrency) {
            const claimed = await claim();
            if (claimed === 0) break;
          }
          // Inside the loop: a delivery that ends while the purge awaits its statement asks for a
          // wake-up, and only a check after the last await sees it (after it, `looping` clears at once).
          if (!wakeRequested) await purgeDeadLetters();
        } while (wakeRequested && !stopped);
      } catch (error) {
        logger.error({ err: error }, 'broadcast outbox could not be read; retrying');
        retryAt = clock.now().getTime() + settings.poll_interval_ms;
      } finally {
        if (looping === run) looping = null;
        schedule(nextDelay());
      }
    });
    looping = run;
    return run;
  }

  /** Dead letters older than the retention are deleted, at most once a minute. */
  async function purgeDeadLetters(): Promise<void> {
    const now = clock.now().getTime();
    if (now - lastPurge < 60_000) return;
    lastPurge = now;
    await repository.purgeDead(new Date(now - settings.dead_letter_retention_hours * 3_600_000));
  }

  /** Destinations not to claim for now: those being delivered to and those paused. */
  function excluded(now: number): string[] {
    for (const [id, until] of pausedUntil) if (until <= now) pausedUntil.delete(id);
    return [...new Set([...busy.keys(), ...pausedUntil.keys()])];
  }

  /**
   * Handed-over rows of destinations that can be delivered to now and whose queue is ready (see
   * `readyAt`), up to `free` destinations.
   */
  function takeHandoff(
    free: number,
    skip: ReadonlySet<string>,
    now: number,
  ): Map<string, BroadcastOutboxTable[]> {
    const taken = new Map<string, BroadcastOutboxTable[]>();
    for (const [destinationId, queue] of handoff) {
      if (taken.size >= free) break;
      if (skip.has(destinationId) || readyAt(queue) > now) continue;
      const batch: BroadcastOutboxTable[] = [];
      for (const row of queue.rows.splice(0, settings.claim_batch))
        batch.push(outbox.partFor(row, destinationId));
      // What is left was queued as long: it goes next without a fresh linger.
      if (queue.rows.length === 0) handoff.delete(destinationId);
      handoffSize -= batch.length;
      taken.set(destinationId, batch);
    }
    return taken;
  }

  /**
   * Rows leased to this worker queued for their destination's next batch (a fan-out row for one of
   * its destinations, see `outbox.open`). Those of a paused destination wait in the database,
   * unleased, until the pause ends: kept here they would hold a lease the pause (Retry-After up to
   * an hour) can outlast.
   */
  function enqueue(
    entries: Iterable<readonly [destinationId: string, row: BroadcastOutboxTable]>,
    now: number,
  ): void {
    const paused = new Map<number, string[]>();
    for (const [destinationId, row] of entries) {
      const until = pausedUntil.get(destinationId);
      if (until !== undefined && until > now) {
        const id = outbox.partFor(row, destinationId).id;
        const ids = paused.get(until);
        if (ids) ids.push(id);
        else paused.set(until, [id]);
        continue;
      }
      const queued = handoff.get(destinationId);
      if (queued) queued.rows.push(row);
      else handoff.set(destinationId, { rows: [row], since: now });
      handoffSize += 1;
    }
    for (const [until, ids] of paused) {
      outbox.postpone(ids, new Date(until), owner).catch((error: unknown) => {
        logger.warn(
          { err: error, events: ids.length },
          'broadcast events of a paused destination not postponed; they wait for their lease',
        );
      });
    }
  }

  /** Starts deliveries: handed-over rows first, then due rows from the database (retries, other instances', recovered). */
  async function claim(): Promise<number> {
    const now = clock.now();
    const skip = new Set(excluded(now.getTime()));
    const groups = takeHandoff(settings.concurrency - busy.size, skip, now.getTime());
    const rows = [...groups.values()].flat();
    /**
     * Rows taken in hand (handed over or claimed, all leased to this worker) and neither started,
     * queued nor handed back yet. A statement that fails before they are started puts them back in
     * their destinations' queues: dropped, a plain row would wait for its lease, and a fan-out row
     * whose parts are dropped would stay open here — claimed back, never expanded again.
     */
    let inHand: BroadcastOutboxTable[] = rows;
    try {
      return await claimAndStart(now, skip, groups, rows, (taken) => {
        inHand = taken;
      });
    } catch (error) {
      for (const row of inHand) {
        held.delete(row.id);
        // Not being delivered to (busy destinations are not claimed for): nothing of theirs to ask for.
        claimedFromDatabase.delete(row.destination_id);
      }
      enqueue(inHand.map(ownEntry), now.getTime());
      throw error;
    }
  }

  async function claimAndStart(
    now: Date,
    skip: ReadonlySet<string>,
    groups: Map<string, BroadcastOutboxTable[]>,
    rows: BroadcastOutboxTable[],
    holding: (rows: BroadcastOutboxTable[]) => void,
  ): Promise<number> {
    const free = settings.concurrency - busy.size - groups.size;
    const due = databaseBacklog || now.getTime() - lastDatabaseClaim >= settings.poll_interval_ms;
    /** Parts claimed for destinations that cannot be sent to now, queued for them. */
    let parked = 0;
    if (free > 0 && due) {
      lastDatabaseClaim = now.getTime();
      const excludedNow = [...skip, ...groups.keys()];
      // Fan-out rows' parts for busy destinations wait in memory: none are claimed while the
      // hand-off holds half its bound, and at most half a claim's worth at a time.
      const fanOutLimit =
        handoffSize < MAX_HANDOFF_ROWS / 2 ? Math.max(1, Math.floor(settings.claim_batch / 2)) : 0;
      const claimLimit = settings.claim_batch;
      const signalsBefore = backlogSignals;
      const claimedNow = await repository.claim({
        limit: claimLimit,
        fanOutLimit,
        now,
        leaseUntil: new Date(now.getTime() + settings.lease_ms),
        owner,
        busy: excludedNow,
      });
      databaseBacklog =
        claimedNow.rows.length === claimLimit ||
        (fanOutLimit > 0 && claimedNow.fanOuts.length === fanOutLimit) ||
        backlogSignals !== signalsBefore;
      const stored = [...claimedNow.fanOuts, ...claimedNow.rows];
      if (stored.length > 0) options.onClaimed?.(leasedRows(stored));
      // A fan-out row is claimed whoever its destinations are: its parts for a destination not to
      // be sent to now wait for it in memory, as handed-over rows do (or in the database while it
      // is paused), rather than split the row.
      const excludedSet = new Set(excludedNow);
      const claimed: BroadcastOutboxTable[] = [];
      const notNow: Array<[string, BroadcastOutboxTable]> = [];
      for (const row of stored) stowPayload(row);
      for (const entry of outbox.open(stored)) {
        if (excludedSet.has(entry[0])) notNow.push(entry);
        else claimed.push(outbox.partFor(entry[1], entry[0]));
      }
      enqueue(notNow, now.getTime());
      holding([...rows, ...claimed]);
      // Kept until the statement succeeds: a failed one is tried again at the next claim.
      toUncount.push(...outbox.takeReclaimed());
      if (toUncount.length > 0) {
        await repository.uncount(toUncount, owner);
        toUncount = [];
      }
      parked = notNow.length;
      for (const row of claimed) {
        claimedFromDatabase.add(row.destination_id);
        rows.push(row);
        const group = groups.get(row.destination_id);
        if (group) group.push(row);
        else groups.set(row.destination_id, [row]);
      }
    }
    // Parts queued for busy destinations count: the loop claims on while the database has more.
    if (rows.length === 0) return parked;
    for (const row of rows) held.add(row.id);
    // At most `concurrency` destinations at once: the groups beyond the free slots go back (a
    // fan-out row's parts wait for their destination in memory instead).
    const entries = [...groups];
    const started = entries.slice(0, Math.max(0, settings.concurrency - busy.size));
    const beyond = entries.slice(started.length).flatMap(([, group]) => group);
    for (const [destinationId] of entries.slice(started.length)) claimedFromDatabase.delete(destinationId);
    for (const row of beyond) held.delete(row.id);
    // A fan-out row's parts wait for their destination in memory; other rows go back.
    const fanOutParts = beyond.filter((row) => outbox.isPart(row.id));
    enqueue(fanOutParts.map(ownEntry), now.getTime());
    const returned = beyond.filter((row) => !outbox.isPart(row.id));
    const starting = started.flatMap(([, group]) => group);
    holding([...starting, ...returned]);
    if (returned.length > 0) {
      await outbox.release(
        returned.map((row) => row.id),
        owner,
      );
    }
    holding(starting);
    const destinations = await destinationsOf(started.map(([id]) => id));
    for (const [destinationId, group] of started) {
      let failedUnexpectedly = false;
      const task = deliverGroup(destinations.get(destinationId) ?? null, group)
        .catch(async (error: unknown) => {
          failedUnexpectedly = true;
          logger.error(
            { err: error, destination_id: destinationId },
            'broadcast delivery failed unexpectedly',
          );
          // Handed back rather than left leased until the lease ends.
          await outbox.release(
            group.filter((row) => held.has(row.id)).map((row) => row.id),
            owner,
          );
        })
        .catch(() => undefined)
        .finally(() => {
          busy.delete(destinationId);
          // A group that failed unexpectedly handed its rows back: asking again at once would take
          // the same rows straight back into the same failure.
          if (claimedFromDatabase.delete(destinationId) && !failedUnexpectedly) {
            databaseBacklog = true;
            backlogSignals += 1;
          }
          for (const row of group) held.delete(row.id);
          // Capacity freed: look for more work now rather than at the next poll.
          if (!stopped) void loop();
        });
      busy.set(destinationId, task);
    }
    return rows.length + parked;
  }

  /**
   * Destination rows, read at most once a second per destination: every handed-over batch would
   * otherwise cost a query. A change (disabled, deleted, new credentials) is announced on the change
   * bus and empties the cache; DESTINATION_CACHE_MS bounds what a lost announcement can delay.
   */
  const destinationCache = new Map<string, { row: ObservabilityDestinationTable | null; at: number }>();
  async function destinationsOf(
    ids: readonly string[],
  ): Promise<Map<string, ObservabilityDestinationTable | null>> {
    const now = performance.now();
    const result = new Map<string, ObservabilityDestinationTable | null>();
    const missing: string[] = [];
    for (const id of ids) {
      const cached = destinationCache.get(id);
      if (cached && now - cached.at < DESTINATION_CACHE_MS) result.set(id, cached.row);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const rows = new Map((await repository.destinations(missing)).map((row) => [row.id, row]));
      for (const id of missing) {
        const row = rows.get(id) ?? null;
        destinationCache.set(id, { row, at: now });
        configCache.delete(id);
        result.set(id, row);
      }
    }
    return result;
  }

  options.bus?.subscribe(POLICY_TOPIC, () => destinationCache.clear());
  options.bus?.onResync(() => destinationCache.clear());

  /** Opened configs, by destination, for the cached row they were opened from. */
  const configCache = new Map<
    string,
    { row: ObservabilityDestinationTable; config: Record<string, unknown> }
  >();
  function configOf(destination: ObservabilityDestinationTable): Record<string, unknown> {
    const cached = configCache.get(destination.id);
    if (cached && cached.row === destination) return cached.config;
    const config = openDestinationConfig(destination, options.secretBox);
    configCache.set(destination.id, { row: destination, config });
    return config;
  }

  /** Marks rows settled in this worker's bookkeeping. */
  const settled = (rows: readonly BroadcastOutboxTable[]) => {
    for (const row of rows) held.delete(row.id);
  };

  async function deliverGroup(
    destination: ObservabilityDestinationTable | null,
    rows: BroadcastOutboxTable[],
  ) {
    const type = destination ? destinationType(destination.type) : undefined;
    if (!destination || !type || destination.deleted_at !== null || destination.enabled !== 1) {
      // Nobody wants these any more (deleted, disabled, or a type this version does not know).
      await outbox.remove(
        rows.map((row) => row.id),
        owner,
      );
      settled(rows);
      metrics?.count(destination?.type ?? 'unknown', 'dropped', rows.length);
      return;
    }
    // An event that was claimed more often than allowed without ever being settled (a process that
    // died while sending it, again and again) is given up instead of retried forever.
    const exhausted: BroadcastOutboxTable[] = [];
    // Loops, not per-call callbacks, in the worker's per-row steps (docs/decisions.md, "The broadcast
    // worker's per-row steps are loops").
    const items: Array<{ row: BroadcastOutboxTable; item: StoredItem }> = [];
    for (const row of rows) {
      if (row.attempts > settings.max_attempts) {
        exhausted.push(row);
        continue;
      }
      // A handed-over row still has the event it was serialized from; others are parsed where they
      // are sent (an unreadable one is refused alone and buried).
      items.push({
        row,
        item: {
          payload: payloadToSend(row),
          event: eventOfBuiltRow(row),
          idempotencyKey: row.idempotency_key,
          generationId: row.generation_id,
          attempt: row.attempts,
        },
      });
    }
    for (const row of exhausted) {
      await bury(
        destination,
        row,
        new DeliveryError('gave up: claimed more often than max_attempts without an answer', {
          retryable: false,
        }),
      );
    }
    let config: Record<string, unknown>;
    try {
      config = configOf(destination);
    } catch (error) {
      // A master key that changed: keep the events (retried, then dead letters) and say why.
      logger.error({ err: error, destination_id: destination.id }, 'destination secrets cannot be opened');
      const failure = new DeliveryError(
        'destination secrets cannot be opened with the configured master key',
        {
          retryable: true,
        },
      );
      for (const { row } of items) await fail(destination, row, failure);
      return;
    }
    // The delivery thread starts at the first batch; its start-up is not part of any time limit.
    await deliverer.warm?.();
    const maxBatch = Math.max(1, type.maxBatch);
    let pending = items;
    while (pending.length > 0) {
      const chunk = pending.slice(0, maxBatch);
      // A chunk that could not finish within its lease is handed back rather than risk a double send.
      const leaseLeft = new Date(chunk[0]?.row.lease_until ?? 0).getTime() - clock.now().getTime();
      if (stopped || leaseLeft < sendTimeoutMs) {
        const rest = pending.map(({ row }) => row);
        await outbox.release(
          rest.map((row) => row.id),
          owner,
        );
        settled(rest);
        return;
      }
      const { pause, unsent } = await deliverChunk(destination, type, config, chunk);
      // Events a stopped batch never sent go first in the next one (each stop settles at least one).
      pending = [...unsent, ...pending.slice(chunk.length)];
      if (pause !== null) {
        // The receiver is down or asked to slow down: the events not yet tried wait with it, their
        // attempt not counted, and the destination is not claimed for until then.
        const waiting = (handoff.get(destination.id)?.rows ?? []).map((row) =>
          outbox.partFor(row, destination.id),
        );
        handoff.delete(destination.id);
        handoffSize -= waiting.length;
        const untried = [...pending.map(({ row }) => row), ...waiting];
        for (const row of waiting) held.add(row.id);
        pausedUntil.set(destination.id, pause.getTime());
        await outbox.postpone(
          untried.map((row) => row.id),
          pause,
          owner,
        );
        settled(untried);
        return;
      }
    }
  }

  /**
   * Sends one batch and settles its rows. Returns when the destination should next be tried, when
   * it failed as a whole in a way that concerns the rest too (unreachable, 429, 503, Retry-After).
   */
  async function deliverChunk(
    destination: ObservabilityDestinationTable,
    type: DestinationType<object>,
    config: Record<string, unknown>,
    chunk: Array<{ row: BroadcastOutboxTable; item: StoredItem }>,
  ): Promise<{ pause: Date | null; unsent: Array<{ row: BroadcastOutboxTable; item: StoredItem }> }> {
    const rows: BroadcastOutboxTable[] = [];
    const items: StoredItem[] = [];
    for (const entry of chunk) {
      rows.push(entry.row);
      items.push(entry.item);
    }
    // One controller per batch (AbortSignal.any on a long-lived signal leaks on Node 20).
    const controller = new AbortController();
    const onStop = () => controller.abort();
    abort.signal.addEventListener('abort', onStop, { once: true });
    const timeout = setTimeout(() => controller.abort(), sendTimeoutMs);
    const started = performance.now();
    let rejected: Map<number, Rejection>;
    let stoppedAt: SendOutcome['stopped'];
    try {
      const outcome = await deliverer.deliver({
        type: type.type,
        items,
        config,
        destination: { id: destination.id, name: destination.name, workspace_id: destination.workspace_id },
        signal: controller.signal,
        now: clock.now(),
        originOverride: (settings.origin_overrides as Readonly<Record<string, string>>)[destination.type],
        view: viewOf(destination),
      });
      rejected = new Map((outcome?.rejected ?? []).map((entry) => [entry.index, entry]));
      stoppedAt = outcome?.stopped;
    } catch (error) {
      if (abort.signal.aborted) {
        // Interrupted by shutdown: not the receiver's fault, and not an attempt.
        await outbox.release(
          rows.map((row) => row.id),
          owner,
        );
        settled(rows);
        return { pause: null, unsent: [] };
      }
      metrics?.latency(destination.type, performance.now() - started);
      const failure = asDeliveryError(error);
      let next: Date | null = null;
      for (const row of rows) next = (await fail(destination, row, failure)) ?? next;
      return { pause: pauseFor(failure, next), unsent: [] };
    } finally {
      clearTimeout(timeout);
      abort.signal.removeEventListener('abort', onStop);
    }
    metrics?.latency(destination.type, performance.now() - started);
    const failedAt = new Set(stoppedAt?.failed);
    const unsentAt = new Set(stoppedAt?.unsent);
    const delivered: BroadcastOutboxTable[] = [];
    const deliveredIds: string[] = [];
    for (let index = 0; index < rows.length; index += 1) {
      if (rejected.has(index) || failedAt.has(index) || unsentAt.has(index)) continue;
      const row = rows[index] as BroadcastOutboxTable;
      delivered.push(row);
      deliveredIds.push(row.id);
    }
    await outbox.remove(deliveredIds, owner);
    settled(delivered);
    metrics?.count(destination.type, 'delivered', delivered.length);
    let pause: Date | null = null;
    const unsent: typeof chunk = [];
    if (unsentAt.size > 0)
      for (const [index, entry] of chunk.entries()) if (unsentAt.has(index)) unsent.push(entry);
    if (stoppedAt) {
      const failedRows = rows.filter((_, index) => failedAt.has(index));
      if (abort.signal.aborted) {
        // Cut short by shutdown: the failed request was not the receiver's doing, and nothing
        // more is sent; all of it goes back uncounted (refused items too: settled at the next start).
        const refused = rows.filter((_, index) => rejected.has(index));
        const back = [...failedRows, ...unsent.map(({ row }) => row), ...refused];
        await outbox.release(
          back.map((row) => row.id),
          owner,
        );
        settled(back);
        return { pause: null, unsent: [] };
      }
      let next: Date | null = null;
      for (const row of failedRows) next = (await fail(destination, row, stoppedAt.error)) ?? next;
      // A batch cut by its own time limit says nothing about the receiver: the rest is sent next.
      const timedOut = controller.signal.aborted;
      if (!timedOut) pause = pauseFor(stoppedAt.error, next);
    }
    for (const [index, entry] of rejected) {
      const row = rows[index];
      if (!row) continue;
      if (abort.signal.aborted) {
        // A multi-request batch cut short by shutdown: the unsent part goes back uncounted.
        await outbox.release([row.id], owner);
        settled([row]);
      } else {
        const failure = deliveryErrorFrom({
          ...entry,
          status: entry.status ?? null,
          retryAfterMs: entry.retryAfterMs ?? null,
        });
        const next = await fail(destination, row, failure);
        // A refusal that says how the receiver answered (an item's own request: S3's uploads, one
        // per event; a 429 in Langfuse's answer) pauses the destination as a batch's failure would.
        if (pause === null && entry.status !== undefined && !controller.signal.aborted)
          pause = pauseFor(failure, next);
      }
    }
    return { pause, unsent };
  }

  /**
   * When a destination should next be tried after a failure that concerns it (see
   * `concernsDestination`): the failed event's next attempt, or, when that event was given up, the
   * backoff of a first retry (or the receiver's `Retry-After`). Null for a failure of the events alone.
   */
  function pauseFor(failure: DeliveryError, next: Date | null): Date | null {
    if (!concernsDestination(failure)) return null;
    if (next !== null) return next;
    const delay = backoffMs(
      1,
      { base: settings.base_backoff_ms, max: settings.max_backoff_ms },
      failure.retryAfterMs,
    );
    return new Date(clock.now().getTime() + delay);
  }

  /** Failure texts already scrubbed, by the error (one destination's batch). */
  const scrubbedTexts = new WeakMap<DeliveryError, string>();

  /**
   * A failure's text as stored and logged: without the destination's secrets, which a receiver that
   * echoes the request (its Authorization header, a URL's token) puts in its error body. The
   * deliveries listing shows it to any key of the workspace, as the connection test's answer.
   */
  function failureText(destination: ObservabilityDestinationTable, error: DeliveryError): string {
    // A batch's failure settles each of its rows with the same error: scrubbed once.
    const known = scrubbedTexts.get(error);
    if (known !== undefined) return known;
    const type = destinationType(destination.type);
    let text = error.message;
    try {
      if (type) text = scrubSecrets(error.message, type, configOf(destination));
    } catch {
      // Secrets that cannot be opened cannot have been sent either.
    }
    scrubbedTexts.set(error, text);
    return text;
  }

  async function bury(
    destination: ObservabilityDestinationTable,
    row: BroadcastOutboxTable,
    error: DeliveryError,
  ) {
    const message = failureText(destination, error);
    await outbox.bury(row.id, { now: clock.now(), error: message, status: error.status, owner });
    settled([row]);
    metrics?.count(destination.type, 'dead', 1);
    logger.warn(
      {
        destination_id: destination.id,
        type: destination.type,
        generation_id: row.generation_id,
        attempts: row.attempts,
        status: error.status,
        error: message,
      },
      'broadcast event moved to the dead letters',
    );
  }

  /** Records a failed attempt: rescheduled with backoff, or buried. Returns the next attempt's time. */
  async function fail(
    destination: ObservabilityDestinationTable,
    row: BroadcastOutboxTable,
    error: DeliveryError,
  ): Promise<Date | null> {
    if (!error.retryable || row.attempts >= settings.max_attempts) {
      await bury(destination, row, error);
      return null;
    }
    const delay = backoffMs(
      row.attempts,
      { base: settings.base_backoff_ms, max: settings.max_backoff_ms },
      error.retryAfterMs,
    );
    const nextAttemptAt = new Date(clock.now().getTime() + delay);
    await outbox.reschedule(row.id, {
      nextAttemptAt,
      error: failureText(destination, error),
      status: error.status,
      owner,
    });
    settled([row]);
    metrics?.count(destination.type, 'retried', 1);
    return nextAttemptAt;
  }

  /**
   * Takes the rows a group commit just stored. Those leased to this worker are delivered from
   * memory; beyond MAX_HANDOFF_ROWS, or once stopped, they are handed back to the database (the
   * promise settles once they are).
   */
  function accept(rows: readonly BroadcastOutboxTable[]): Promise<void> {
    const overflow: string[] = [];
    const now = clock.now().getTime();
    for (const row of rows) {
      if (row.leased_by !== owner) continue;
      // Beyond the bound a row goes back as it is (a fan-out row whole, not split).
      if (stopped || handoffSize >= MAX_HANDOFF_ROWS) overflow.push(row.id);
      else {
        // Held until every destination has it: its payload waits off the JS heap.
        stowPayload(row);
        enqueue(outbox.open([row]), now);
      }
    }
    const handedBack =
      overflow.length === 0
        ? Promise.resolve()
        : outbox.release(overflow, owner).catch((error: unknown) => {
            // Their leases expire and any worker claims them then.
            logger.warn(
              { err: error, events: overflow.length },
              'broadcast events not handed back; they wait for their lease',
            );
          });
    if (!started || stopped) return handedBack;
    // Nothing ready yet: the timer is brought forward to the first queue's end of linger rather
    // than running a pass per commit that would find nothing to send.
    const due = firstReady(now);
    if (due <= now) void loop();
    else if (due !== Number.POSITIVE_INFINITY && !looping && (timer === null || timerDue > due))
      schedule(due - now);
    return handedBack;
  }

  return {
    owner,
    start() {
      if (started || stopped) return;
      started = true;
      void loop();
    },
    /** New events were stored: look now instead of at the next poll. */
    wake() {
      if (started && !stopped) void loop();
    },
    accept,
    /**
     * Takes the rows a SQLite thread built and stored at a group commit, by id: those leased to
     * this worker are read back (in the order their commits came; only while they hold the lease
     * they were stored with) and taken as `accept` takes them. A read that fails leaves them to
     * their lease, after which a claim finds them.
     */
    acceptStored(stored: readonly StoredOutboxRow[]) {
      const mine: StoredOutboxRow[] = [];
      for (const row of stored) if (row.leased_by === owner) mine.push(row);
      if (mine.length === 0) return;
      reading = reading
        .then(() => repository.heldRows(mine, owner))
        .then((rows) => accept(rows))
        .catch((error: unknown) => {
          logger.warn(
            { err: error, events: mine.length },
            'broadcast events stored for this worker not taken; they wait for their lease',
          );
        });
    },
    /**
     * Runs claim-and-deliver passes until nothing is in flight, sending hand-off queues without
     * lingering (tests drive the worker with it).
     */
    async drain(): Promise<void> {
      flushing = true;
      try {
        await reading;
        await loop();
        while (busy.size > 0) await Promise.allSettled([...busy.values()]);
      } finally {
        flushing = false;
      }
    },
    /** Stops claiming, aborts sends in flight and hands their events back for the next worker. */
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (timer) clearTimeout(timer);
      abort.abort();
      // Rows read back now are handed back by `accept`, as it does once stopped.
      await reading;
      await looping?.catch(() => undefined);
      await Promise.allSettled([...busy.values()]);
      const waiting = [...handoff].flatMap(([destinationId, queue]) =>
        queue.rows.map((row) => outbox.partFor(row, destinationId).id),
      );
      handoff.clear();
      handoffSize = 0;
      const unsettled = [...held, ...waiting];
      if (unsettled.length > 0) await outbox.release(unsettled, owner).catch(() => undefined);
    },
  };
}

export type BroadcastWorker = ReturnType<typeof createBroadcastWorker>;

/** What the worker reports of its deliveries. */
export interface WorkerMetrics {
  count(type: string, outcome: Outcome, events: number): void;
  latency(type: string, ms: number): void;
}

/**
 * The worker's metrics on `registry`: events by outcome, delivery times, and the outbox's pending
 * and dead events (counted in `storage` at each scrape).
 */
export function registerWorkerMetrics(registry: Registry, storage: Storage): WorkerMetrics {
  const repository = createOutboxRepository(storage);
  const deliveries = new Counter({
    name: 'switchyard_broadcast_events_total',
    help: 'Broadcast events by destination type and outcome (delivered, retried, dead, dropped)',
    labelNames: ['type', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'switchyard_broadcast_delivery_seconds',
    help: 'Time one delivery request (a batch) took, by destination type',
    labelNames: ['type'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  new Gauge({
    name: 'switchyard_broadcast_outbox_events',
    help: 'Broadcast events stored in the outbox, by status (pending, dead)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      this.set({ status: 'pending' }, 0);
      this.set({ status: 'dead' }, 0);
      try {
        for (const row of await repository.countByStatus()) this.set({ status: row.status }, row.count);
      } catch {
        // The database is away; the scrape reports zeros rather than failing.
      }
    },
  });
  return {
    count(type: string, outcome: Outcome, events: number) {
      if (events > 0) deliveries.inc({ type, outcome }, events);
    },
    latency(type: string, ms: number) {
      duration.observe({ type }, ms / 1000);
    },
  };
}
