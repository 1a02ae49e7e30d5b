import { type Static, Type } from 'typebox';
import { MAX_USD_AMOUNT } from '../billing/money.js';

/** Per-provider settings; later issues add routing knobs here. */
const ProviderSettings = Type.Object(
  {
    base_url: Type.Optional(Type.String({ minLength: 1 })),
    api_key: Type.Optional(Type.String()),
    /** Longest wait for the upstream's response headers (a non-streamed answer arrives with them). */
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Longest wait from sending a streamed request to its first output. */
    first_token_timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Longest silence between two chunks of a streamed answer. */
    idle_timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const RateLimitSettings = Type.Object(
  {
    /** Requests one API key may make per window; 0 disables the limit. */
    requests: Type.Integer({ minimum: 0 }),
    window_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }),
  },
  { additionalProperties: false },
);

const CatalogProvider = Type.Object(
  {
    slug: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]*$' }),
    name: Type.String({ minLength: 1 }),
    base_url: Type.String({ pattern: '^https?://' }),
    /** The upstream wire protocol family; local servers usually speak OpenAI's. */
    adapter: Type.Optional(Type.String({ minLength: 1 })),
    headquarters: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
    privacy_policy_url: Type.Optional(Type.String()),
    terms_of_service_url: Type.Optional(Type.String()),
    status_page_url: Type.Optional(Type.String()),
    /** Whether the provider trains on or keeps prompts; a local server does neither. */
    training: Type.Optional(Type.Boolean()),
    retains_prompts: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const PriceString = Type.String({ pattern: '^\\d+(\\.\\d+)?$' });

const CatalogModel = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9~][a-z0-9._-]*/[a-zA-Z0-9._:-]+$' }),
    name: Type.String({ minLength: 1 }),
    provider: Type.String({ minLength: 1 }),
    provider_model_id: Type.String({ minLength: 1 }),
    context_length: Type.Integer({ minimum: 1 }),
    pricing: Type.Object(
      {
        prompt: PriceString,
        completion: PriceString,
        image: Type.Optional(PriceString),
        request: Type.Optional(PriceString),
      },
      { additionalProperties: false },
    ),
    description: Type.Optional(Type.String()),
    created: Type.Optional(Type.Integer({ minimum: 0 })),
    tokenizer: Type.Optional(Type.String()),
    input_modalities: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    output_modalities: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    supported_parameters: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    quantization: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

/**
 * The whole configuration, as read from the optional file and the environment.
 * Every object rejects unknown keys, so a typo stops the start instead of being ignored.
 */
/** An origin (`https://host[:port]`) a destination type is sent to instead of its vendor host. */
const ORIGIN = Type.String({ pattern: '^https?://[^/?#]+$' });

export const ConfigSchema = Type.Object(
  {
    port: Type.Integer({ minimum: 0, maximum: 65_535 }),
    host: Type.String({ minLength: 1 }),
    /** The gateway's address as clients see it (behind a proxy, say); used for absolute links. */
    public_url: Type.Union([Type.String({ pattern: '^https?://[^/]+(/.*)?$' }), Type.Null()]),
    database_url: Type.String({ pattern: '^(sqlite:|postgres://|postgresql://)' }),
    /** PostgreSQL only: the schema that holds Switchyard's tables (created if absent). */
    database_schema: Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$' }),
    redis_url: Type.Union([Type.String({ pattern: '^rediss?://' }), Type.Null()]),
    /** Prefix of every Redis key and channel, so several deployments can share one Redis. */
    redis_prefix: Type.String({ minLength: 1 }),
    master_key: Type.Union([Type.String({ minLength: 32 }), Type.Null()]),
    bootstrap_key: Type.Union([Type.String({ pattern: '^sk-sy-v1-[0-9a-f]{64}$' }), Type.Null()]),
    log_level: Type.Union([
      Type.Literal('fatal'),
      Type.Literal('error'),
      Type.Literal('warn'),
      Type.Literal('info'),
      Type.Literal('debug'),
      Type.Literal('trace'),
      Type.Literal('silent'),
    ]),
    providers: Type.Record(Type.String({ pattern: '^[a-z0-9][a-z0-9._-]*$' }), ProviderSettings),
    credits: Type.Object(
      { initial: Type.Number({ minimum: 0, maximum: MAX_USD_AMOUNT }) },
      { additionalProperties: false },
    ),
    limits: Type.Object(
      {
        body_bytes: Type.Integer({ minimum: 1024, maximum: 1_073_741_824 }),
        rate_limit: RateLimitSettings,
        /** How long a streamed answer waits for a client that reads nothing before dropping it. */
        client_stall_ms: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
      },
      { additionalProperties: false },
    ),
    shutdown_timeout_ms: Type.Integer({ minimum: 0, maximum: 600_000 }),
    /**
     * How far V8 lets the heap grow past what survived its last full collection before collecting
     * again, in percent (`0` keeps V8's own factor, up to 300% on a large machine). See
     * src/platform/heap-growth.ts.
     */
    heap_growth_percent: Type.Integer({ minimum: 0, maximum: 300 }),
    /**
     * The nice value the process's helper threads (V8's GC and compiler workers, libuv's pool) are
     * lowered to at start, so that on a busy core the request thread runs first; `0` leaves them.
     * Linux only. See src/platform/helper-threads.ts.
     */
    helper_thread_niceness: Type.Integer({ minimum: 0, maximum: 19 }),
    /**
     * V8's parallel scavenging: `auto` turns it off when the process has one CPU to run on (its
     * affinity or its container's CPU quota), where the tasks cannot run in parallel. See
     * src/platform/parallel-scavenge.ts.
     */
    parallel_scavenge: Type.Union([Type.Literal('auto'), Type.Boolean()]),
    /**
     * V8's allocation-site pretenuring (a site whose objects mostly survive has them allocated in
     * the old generation from the start); off by default. See src/platform/allocation-site-pretenuring.ts.
     */
    allocation_site_pretenuring: Type.Boolean(),
    /**
     * The young generation (V8's new space) stops growing at this many megabytes, as V8 reports its
     * size; `0` leaves V8's own growth (to 32 MB under load). See src/platform/young-generation.ts.
     */
    young_generation_mb: Type.Integer({ minimum: 0, maximum: 1024 }),
    /**
     * SQLite: checkpoint the WAL from a worker thread, so the two fsyncs of a checkpoint never run
     * inside a commit on the event loop (src/storage/sqlite-checkpointer.ts). Ignored on PostgreSQL.
     */
    sqlite_background_checkpoint: Type.Boolean(),
    /**
     * SQLite: keep the connection in a worker thread, so no statement, commit or checkpoint runs on
     * the event loop (src/storage/sqlite-thread.ts); `sqlite_background_checkpoint` then has nothing
     * to do. `auto` (the default) turns it on when the process has more than one CPU to run on (its
     * affinity mask or its container's CPU quota): it pays with a core to spare, and costs CPU and
     * ~9 MB on one core (docs/decisions.md). `true`/`false` force it. Ignored on PostgreSQL.
     */
    sqlite_thread: Type.Union([Type.Literal('auto'), Type.Boolean()]),
    /**
     * SQLite file without `sqlite_thread`: run the generation group commits (records, spend, the
     * broadcast outbox) in a worker thread with a connection of their own, started at the first
     * commit, so the write every request leads to never holds the event loop
     * (src/storage/sqlite-commit-thread.ts); the broadcast events are built there too
     * (src/broadcast/outbox-build.ts). Ignored on PostgreSQL and for an in-memory database.
     */
    sqlite_commit_thread: Type.Boolean(),
    /**
     * Serve inference requests from node:http past Fastify's request lifecycle when their line and
     * headers need nothing more of it (src/gateway/direct-lane.ts); `false` sends every request
     * through Fastify's routes, which answer the same.
     */
    direct_lane: Type.Boolean(),
    /**
     * Threads that run guardrail content filters on prompts with an NLP filter (person-name,
     * address) or over 8,192 characters, so their scan never holds the event loop
     * (src/gateway/pipeline/content-filters/content-filter-threads.ts). `auto` (the default) is one
     * fewer than the CPUs the process can use, at least 1 and at most 4; `0` scans every prompt on
     * the request thread. Each is started when first needed.
     */
    content_filter_threads: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 0, maximum: 16 })]),
    broadcast: Type.Object(
      {
        /**
         * Whether destinations may point at loopback, private or link-local addresses (an internal
         * OpenTelemetry collector, a test receiver). Off by default: a management key must not be able
         * to make the gateway call into its own network.
         */
        allow_private_networks: Type.Boolean(),
        /** The region this gateway serves; a destination receives traffic of the regions it lists. */
        region: Type.Union([Type.Literal('global'), Type.Literal('europe'), Type.Literal('us')]),
        /**
         * Per destination type, an origin to send to instead of the vendor host the config implies
         * (snowflake's account host, newrelic's region host, Opik Cloud): a proxy or a private link.
         * Only the types whose config names no URL take one; the others' config names their own.
         */
        origin_overrides: Type.Object(
          {
            newrelic: Type.Optional(ORIGIN),
            opik: Type.Optional(ORIGIN),
            snowflake: Type.Optional(ORIGIN),
          },
          { additionalProperties: false },
        ),
        /** Runs the outbox delivery worker in this instance (every instance may; they share the work). */
        worker_enabled: Type.Boolean(),
        /**
         * Sends deliveries (encoding, HTTP exchanges) from a worker thread at the lowest scheduling
         * priority (nice 19 and SCHED_IDLE on Linux), so they never hold up requests; false sends
         * from the request thread.
         */
        delivery_thread: Type.Boolean(),
        /**
         * Runs the whole outbox worker in that thread, with a database connection of its own: it
         * holds handed-over events through their linger, claims, sends and settles there, so the
         * request thread only builds the events and commits their rows (docs/observability.md,
         * "Speed"). Needs `delivery_thread`; an in-memory SQLite database keeps the worker on the
         * request thread (a second connection would open another database).
         */
        worker_thread: Type.Boolean(),
        /**
         * Linux: the delivery thread also runs in the SCHED_IDLE class (set with util-linux `chrt`),
         * so a request thread sharing its core is never kept waiting by it. False keeps nice 19
         * alone, which gives deliveries a larger share of a core that requests keep fully busy.
         * The worker thread (`worker_thread`) applies it on SQLite too: its connection is a SQLite
         * thread of its own, which takes the database's write lock that the group commits wait for
         * and so keeps the normal policy, lowered to the same nice value.
         */
        delivery_thread_idle: Type.Boolean(),
        /**
         * The delivery thread's nice value (0 leaves it at the process's). 19 yields the most to
         * requests; a host kept busy by other processes can then starve deliveries for a long time,
         * so such a host may want less (with `delivery_thread_idle: false`, which otherwise decides).
         */
        delivery_thread_niceness: Type.Integer({ minimum: 0, maximum: 19 }),
        /** How often an idle worker looks for due events. */
        poll_interval_ms: Type.Integer({ minimum: 10, maximum: 60_000 }),
        /**
         * How long the events a group commit hands the worker may wait for more of the same
         * destination before they are sent: fewer, fuller batches (one HTTP request and one outbox
         * statement for many events) at the price of this much delivery delay. 0 sends at once. At
         * most a quarter of `lease_ms` (checked on load).
         */
        batch_linger_ms: Type.Integer({ minimum: 0, maximum: 60_000 }),
        /** Events claimed per round (all destinations together). */
        claim_batch: Type.Integer({ minimum: 1, maximum: 5_000 }),
        /** Delivery attempts before an event goes to the dead letters. */
        max_attempts: Type.Integer({ minimum: 1, maximum: 100 }),
        /** First retry delay; it doubles per attempt (with jitter) up to max_backoff_ms. */
        base_backoff_ms: Type.Integer({ minimum: 1, maximum: 3_600_000 }),
        max_backoff_ms: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
        /** How long a claimed event stays reserved for its worker; a crashed worker's events return after it. */
        lease_ms: Type.Integer({ minimum: 2_000, maximum: 3_600_000 }),
        /** Deliveries (one destination's batch each) running at once per instance. */
        concurrency: Type.Integer({ minimum: 1, maximum: 64 }),
        /** How long dead letters are kept (listed, retryable) before they are deleted. */
        dead_letter_retention_hours: Type.Integer({ minimum: 1, maximum: 87_600 }),
      },
      { additionalProperties: false },
    ),
    catalog: Type.Object(
      {
        /** A directory with models.json, endpoints.json, providers.json, usage-daily.json; null = bundled. */
        snapshot_dir: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        hidden_providers: Type.Array(Type.String({ minLength: 1 })),
        providers: Type.Array(CatalogProvider),
        models: Type.Array(CatalogModel),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type CatalogConfig = Static<typeof ConfigSchema>['catalog'];

export type Config = Readonly<Static<typeof ConfigSchema>>;

export const defaultConfig: Static<typeof ConfigSchema> = {
  port: 8080,
  host: '127.0.0.1',
  public_url: null,
  database_url: 'sqlite:./data/switchyard.db',
  database_schema: 'public',
  redis_url: null,
  redis_prefix: 'switchyard:',
  master_key: null,
  bootstrap_key: null,
  log_level: 'info',
  providers: {},
  credits: { initial: 0 },
  limits: {
    body_bytes: 4 * 1024 * 1024,
    rate_limit: { requests: 600, window_seconds: 60 },
    client_stall_ms: 60_000,
  },
  shutdown_timeout_ms: 10_000,
  heap_growth_percent: 20,
  helper_thread_niceness: 10,
  parallel_scavenge: 'auto',
  allocation_site_pretenuring: false,
  young_generation_mb: 8,
  sqlite_background_checkpoint: true,
  sqlite_thread: 'auto',
  sqlite_commit_thread: true,
  direct_lane: true,
  content_filter_threads: 'auto',
  broadcast: {
    allow_private_networks: false,
    region: 'global',
    origin_overrides: {},
    worker_enabled: true,
    delivery_thread: true,
    worker_thread: true,
    delivery_thread_idle: true,
    delivery_thread_niceness: 19,
    poll_interval_ms: 500,
    batch_linger_ms: 1_000,
    claim_batch: 200,
    max_attempts: 8,
    base_backoff_ms: 1_000,
    max_backoff_ms: 300_000,
    lease_ms: 60_000,
    concurrency: 4,
    dead_letter_retention_hours: 168,
  },
  catalog: { snapshot_dir: null, hidden_providers: [], providers: [], models: [] },
};
