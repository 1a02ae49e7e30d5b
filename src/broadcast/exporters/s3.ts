import type { SignatureV4 } from '@smithy/signature-v4';
import { type Static, Type } from 'typebox';
import type { BroadcastEvent } from '../broadcast-event.js';
import {
  DeliveryError,
  type DestinationType,
  type ExportContext,
  type OutboxItem,
  rejectionOf,
  type SendOutcome,
} from '../destination-type.js';
import { traceDocument } from '../trace-document.js';
import {
  type ConfigProblem,
  CustomHeadersSchema,
  headerProblems,
  mergeHeaders,
  urlProblems,
} from './exporter-support.js';

/**
 * `s3`: one JSON object per generation, `PUT` to `<pathTemplate>/<traceId>-<timestamp>.json`
 * (reference §3.1/§3.3) on Amazon S3 or any S3-compatible store (R2, MinIO) named by `endpoint`.
 * Requests are signed with AWS Signature V4. The object key depends only on the event (its trace
 * id and start time), so a retried delivery overwrites the same object instead of adding one.
 */

const s3ConfigSchema = Type.Object(
  {
    bucketName: Type.String({ minLength: 3, maxLength: 63 }),
    accessKeyId: Type.String({ minLength: 1 }),
    secretAccessKey: Type.String({ minLength: 1 }),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    endpoint: Type.Optional(Type.String({ format: 'uri' })),
    sessionToken: Type.Optional(Type.String({ minLength: 1 })),
    prefix: Type.Optional(Type.String({ maxLength: 512 })),
    pathTemplate: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type S3Config = Static<typeof s3ConfigSchema>;

const DEFAULT_REGION = 'us-east-1';
const DEFAULT_PREFIX = 'openrouter-traces';
const DEFAULT_PATH_TEMPLATE = '{prefix}/{date}';
const TEMPLATE_VARIABLES = new Set(['prefix', 'date', 'year', 'month', 'day', 'apiKeyName']);
/** PUTs of one batch in flight at once: enough to hide latency without tripping S3's SlowDown. */
const PUT_CONCURRENCY = 8;
/** Headers the exporter sets for signing; a custom header of the same name is dropped. */
const SIGNING_HEADERS = new Set([
  'authorization',
  'host',
  'content-type',
  'content-length',
  'x-amz-date',
  'x-amz-content-sha256',
  'x-amz-security-token',
]);

/** Where the bucket lives: the URL of the bucket root and the path prefix keys are appended to. */
interface BucketLocation {
  /** `scheme://host[:port]`. */
  origin: string;
  /** The URI-encoded path before the object key, ending in `/`: `/bucket/` (path style) or `/`. */
  basePath: string;
}

function bucketLocation(config: S3Config): BucketLocation {
  const bucket = encodeKeySegment(config.bucketName);
  if (config.endpoint) {
    const url = new URL(config.endpoint);
    return { origin: url.origin, basePath: `${url.pathname.replace(/\/+$/, '')}/${bucket}/` };
  }
  const region = config.region ?? DEFAULT_REGION;
  // AWS's certificate (*.s3.<region>.amazonaws.com) covers one label: a bucket name with dots fails
  // TLS as a host name, so it goes in the path, as AWS's own SDKs do.
  if (config.bucketName.includes('.'))
    return { origin: `https://s3.${region}.amazonaws.com`, basePath: `/${bucket}/` };
  return { origin: `https://${config.bucketName}.s3.${region}.amazonaws.com`, basePath: '/' };
}

/**
 * S3's canonical URI encoding of one key segment: every byte except the RFC 3986 unreserved
 * characters is percent-encoded (encodeURIComponent leaves `!'()*` alone, so they are added).
 */
function encodeKeySegment(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The object key for an event: `<rendered template>/<traceId>-<start ms>.json`, the reference's
 * name. A trace the client named (`trace.trace_id`) is shared by its generations, and two of them
 * starting in the same millisecond (parallel calls of one agent run) would overwrite each other's
 * object: theirs end in `-<spanId>.json`, the generation's own span id, stable across redeliveries.
 */
export function objectKey(config: S3Config, event: BroadcastEvent): string {
  const start = new Date(event.started_at);
  const date = start.toISOString().slice(0, 10);
  const values: Record<string, string> = {
    prefix: config.prefix ?? DEFAULT_PREFIX,
    date,
    year: date.slice(0, 4),
    month: date.slice(5, 7),
    day: date.slice(8, 10),
    apiKeyName: pathSafe(event.api_key_name),
  };
  const rendered = (config.pathTemplate ?? DEFAULT_PATH_TEMPLATE).replace(
    /\{(\w+)\}/g,
    (_, name: string) => values[name] ?? '',
  );
  const directory = rendered.split('/').filter((segment) => segment.length > 0);
  const { trace } = event;
  const name =
    trace.external_trace_id === null
      ? `${trace.trace_id}-${start.getTime()}.json`
      : `${trace.trace_id}-${start.getTime()}-${trace.span_id}.json`;
  return [...directory, name].join('/');
}

/** A key name reduced to characters that are safe in a path segment (no `/`, no `..`). */
function pathSafe(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return safe.length > 0 ? safe : 'unnamed';
}

/**
 * The signing libraries (~15 MB resident) are loaded by the first S3 delivery or check, not at start:
 * most gateways never send to S3.
 */
let signingLibraries: Promise<
  [typeof import('@smithy/signature-v4'), typeof import('@aws-crypto/sha256-js')]
> | null = null;
const loadSigningLibraries = () => {
  // A failed import is not remembered: the next delivery tries again.
  signingLibraries ??= Promise.all([import('@smithy/signature-v4'), import('@aws-crypto/sha256-js')]).catch(
    (error: unknown) => {
      signingLibraries = null;
      throw error;
    },
  );
  return signingLibraries;
};

async function signer(config: S3Config): Promise<SignatureV4> {
  const [{ SignatureV4 }, { Sha256 }] = await loadSigningLibraries();
  return new SignatureV4({
    service: 's3',
    region: config.region ?? DEFAULT_REGION,
    credentials: {
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
      ...(config.sessionToken ? { sessionToken: config.sessionToken } : {}),
    },
    sha256: Sha256,
    // S3 signs the path as sent: it must not be normalised or encoded a second time.
    uriEscapePath: false,
  });
}

interface SignedRequest {
  url: string;
  headers: Record<string, string>;
}

/**
 * Signs a request to `path` (already URI-encoded). Custom headers are signed with the rest (S3
 * requires every `x-amz-*` header signed) but cannot replace the signing headers. `host` is signed
 * and then left for the HTTP client, which sends the same value from the URL.
 */
async function signRequest(options: {
  config: S3Config;
  method: 'PUT' | 'HEAD';
  location: BucketLocation;
  path: string;
  body?: Uint8Array;
  now: Date;
}): Promise<SignedRequest> {
  const { config, method, location, path, body, now } = options;
  const url = new URL(location.origin);
  const own = { host: url.host, ...(body ? { 'content-type': 'application/json' } : {}) };
  const headers = mergeHeaders(config.headers, own, SIGNING_HEADERS);
  const signed = await (await signer(config)).sign(
    {
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path,
      query: {},
      headers,
      ...(body ? { body } : {}),
    },
    { signingDate: now },
  );
  const { host: _host, ...sent } = signed.headers as Record<string, string>;
  return { url: `${location.origin}${path}`, headers: sent };
}

async function putObject(item: OutboxItem, context: ExportContext<S3Config>): Promise<void> {
  const { config } = context;
  const location = bucketLocation(config);
  const key = objectKey(config, item.event);
  const body = new TextEncoder().encode(JSON.stringify(traceDocument(item.event)));
  const path = `${location.basePath}${key.split('/').map(encodeKeySegment).join('/')}`;
  const request = await signRequest({ config, method: 'PUT', location, path, body, now: context.now });
  await context.http.send(request.url, {
    method: 'PUT',
    headers: request.headers,
    body,
    signal: context.signal,
  });
}

/**
 * One PUT per event. Items fail independently: the failed ones are reported as rejected, unless
 * every one failed, in which case the batch fails as a whole (retryable if any failure was).
 */
async function send(items: readonly OutboxItem[], context: ExportContext<S3Config>): Promise<SendOutcome> {
  const failures = new Map<number, DeliveryError>();
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        await putObject(items[index] as OutboxItem, context);
      } catch (error) {
        failures.set(index, asDeliveryError(error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, items.length) }, worker));
  if (failures.size === 0) return {};
  const errors = [...failures.values()];
  if (failures.size === items.length)
    throw errors.find((error) => error.retryable) ?? (errors[0] as DeliveryError);
  return { rejected: [...failures].map(([index, error]) => rejectionOf(index, error)) };
}

function asDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  return new DeliveryError(`s3 upload failed: ${(error as Error).message ?? String(error)}`, {
    retryable: true,
    cause: error,
  });
}

/**
 * A signed HEAD of the bucket: proves the credentials, region and bucket without writing. S3
 * answers a bucket in another region with 301 and `x-amz-bucket-region`, which is named here.
 */
async function testConnection(context: Omit<ExportContext<S3Config>, 'destination'>): Promise<void> {
  const { config } = context;
  const location = bucketLocation(config);
  const path = location.basePath === '/' ? '/' : location.basePath.replace(/\/$/, '');
  const request = await signRequest({ config, method: 'HEAD', location, path, now: context.now });
  const response = await context.http.send(request.url, {
    method: 'HEAD',
    headers: request.headers,
    signal: context.signal,
    acceptStatuses: [301],
  });
  if (response.status === 301) {
    const region = response.headers['x-amz-bucket-region'];
    throw new DeliveryError(
      `bucket ${config.bucketName} is in region ${String(region ?? 'another region')}`,
      {
        retryable: false,
        status: 301,
      },
    );
  }
}

/** S3's bucket naming rules (general purpose buckets). */
function bucketNameProblem(name: string): string | null {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)) {
    return 'must be 3–63 characters of lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit';
  }
  if (name.includes('..')) return 'must not contain two adjacent dots';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return 'must not be formatted as an IP address';
  if (name.startsWith('xn--') || name.startsWith('sthree-')) return 'must not start with a reserved prefix';
  if (name.endsWith('-s3alias') || name.endsWith('--ol-s3')) return 'must not end with a reserved suffix';
  return null;
}

/** Literal characters allowed in `prefix`/`pathTemplate`: S3's safe key characters and `/`. */
const SAFE_PATH = /^[A-Za-z0-9!_.*'()=/-]*$/;

function pathProblem(value: string, allowVariables: boolean): string | null {
  if (value.startsWith('/')) return 'must not start with /';
  if (value.includes('..')) return 'must not contain ..';
  const literal = value.replace(/\{(\w+)\}/g, (match, name: string) =>
    allowVariables && TEMPLATE_VARIABLES.has(name) ? '' : match,
  );
  if (/[{}]/.test(literal)) {
    return allowVariables
      ? 'may only use the variables {prefix} {date} {year} {month} {day} {apiKeyName}'
      : 'must not contain variables';
  }
  if (!SAFE_PATH.test(literal)) return "may only contain letters, digits, / and !_.*'()=-";
  return null;
}

function validate(config: S3Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const bucket = bucketNameProblem(config.bucketName);
  if (bucket) problems.push({ field: 'bucketName', message: bucket });
  problems.push(...urlProblems({ endpoint: config.endpoint }));
  if (config.region !== undefined && !/^[a-z0-9-]+$/.test(config.region)) {
    problems.push({ field: 'region', message: 'must be a region name such as us-east-1' });
  }
  const prefix = config.prefix === undefined ? null : pathProblem(config.prefix, false);
  if (prefix) problems.push({ field: 'prefix', message: prefix });
  const template = config.pathTemplate === undefined ? null : pathProblem(config.pathTemplate, true);
  if (template) problems.push({ field: 'pathTemplate', message: template });
  return [...problems, ...headerProblems(config.headers)];
}

export const s3Destination: DestinationType<S3Config> = {
  type: 's3',
  configSchema: s3ConfigSchema,
  defaults: { prefix: DEFAULT_PREFIX, pathTemplate: DEFAULT_PATH_TEMPLATE },
  secretFields: ['accessKeyId', 'secretAccessKey', 'sessionToken'],
  validate,
  urls: (config) => {
    const location = bucketLocation(config);
    return [`${location.origin}${location.basePath}`];
  },
  maxBatch: 50,
  testOnSave: false,
  send,
  testConnection,
};
