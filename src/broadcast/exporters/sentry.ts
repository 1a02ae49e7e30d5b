import { type Static, Type } from 'typebox';
import { CustomHeadersSchema, urlProblems } from './exporter-support.js';
import { otlpDestination } from './otlp-delivery.js';

/** Reference §3.1: `https://<public key>[:<secret>]@<host>[/<path>]/<project id>`. */
const DSN_PATTERN = '^https://([^:@]+)(?::[^@]*)?@([^/]+)(?:/[^/]+)*/(\\d+)/?$';
const DSN = new RegExp(DSN_PATTERN);

const sentryConfigSchema = Type.Object(
  {
    dsn: Type.String({ pattern: DSN_PATTERN }),
    /** The project's "OTLP Traces Endpoint" (Settings > Client Keys), e.g. `https://o1.ingest.sentry.io/api/2/integration/otlp/v1/traces`. */
    otlpEndpoint: Type.String({ format: 'uri' }),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type SentryConfig = Static<typeof sentryConfigSchema>;

/**
 * Sentry's OTLP traces ingestion: OTLP JSON posted to the project's endpoint with
 * `x-sentry-auth: sentry sentry_key=<public key>` (https://docs.sentry.io/concepts/otlp/direct/traces/).
 * The DSN is treated as a secret: its public key is the credential.
 */
export const sentryDestination = otlpDestination<SentryConfig>({
  type: 'sentry',
  configSchema: sentryConfigSchema,
  defaults: {},
  secretFields: ['dsn'],
  validate: (config) => [
    ...(DSN.test(config.dsn)
      ? []
      : [{ field: 'dsn', message: 'must be a Sentry DSN: https://<public key>@<host>/<project id>' }]),
    ...urlProblems({ otlpEndpoint: config.otlpEndpoint }, { verbatim: true }),
  ],
  url: ({ config }) => config.otlpEndpoint,
  headers: (config) => ({ 'x-sentry-auth': `sentry sentry_key=${sentryPublicKey(config.dsn)}` }),
  sentSecrets: (config) => [sentryPublicKey(config.dsn)],
});

/** The public key of a DSN that passed `validate` (the first group of the reference's pattern). */
export function sentryPublicKey(dsn: string): string {
  const key = DSN.exec(dsn)?.[1];
  if (!key) throw new TypeError('not a Sentry DSN');
  return key;
}
