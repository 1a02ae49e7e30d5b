import { type Static, Type } from 'typebox';

/** Per-provider settings; later issues add routing knobs here. */
const ProviderSettings = Type.Object(
  {
    base_url: Type.Optional(Type.String({ minLength: 1 })),
    api_key: Type.Optional(Type.String()),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
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

/**
 * The whole configuration, as read from the optional file and the environment.
 * Every object rejects unknown keys, so a typo stops the start instead of being ignored.
 */
export const ConfigSchema = Type.Object(
  {
    port: Type.Integer({ minimum: 0, maximum: 65_535 }),
    host: Type.String({ minLength: 1 }),
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
      { initial: Type.Number({ minimum: 0, maximum: 1_000_000 }) },
      { additionalProperties: false },
    ),
    limits: Type.Object(
      {
        body_bytes: Type.Integer({ minimum: 1024, maximum: 1_073_741_824 }),
        rate_limit: RateLimitSettings,
      },
      { additionalProperties: false },
    ),
    shutdown_timeout_ms: Type.Integer({ minimum: 0, maximum: 600_000 }),
  },
  { additionalProperties: false },
);

export type Config = Readonly<Static<typeof ConfigSchema>>;

export const defaultConfig: Static<typeof ConfigSchema> = {
  port: 8080,
  host: '127.0.0.1',
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
  },
  shutdown_timeout_ms: 10_000,
};
