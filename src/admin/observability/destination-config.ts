import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TSchema } from 'typebox';
import type { DestinationType } from '../../broadcast/destination-type.js';
import type { ExporterHttp } from '../../broadcast/exporter-http.js';
import { invalidRequest } from '../../errors/app-error.js';
import { isHeaderValue } from '../../platform/header-value.js';
import { pathTooDeep } from '../../platform/json-depth.js';
import { NO_NUL_PATTERN } from '../../platform/schema-types.js';
import type { SecretBox } from '../../platform/secret-box.js';
import { addGatewayFormats } from '../../platform/validation.js';
import type { ObservabilityDestinationTable } from '../../storage/database-schema.js';

export type DestinationConfig = Record<string, unknown>;
type AnyDestinationType = DestinationType<object>;

export const MAX_CUSTOM_HEADERS = 20;
export const MAX_HEADER_VALUE_LENGTH = 4096;
/** Secrets shorter than this are masked completely: 8 shown characters would be most of them. */
const MIN_LENGTH_TO_SHOW_ENDS = 12;
const SHOWN_ENDS = 4;
const FULLY_MASKED = '****';

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Headers the gateway's HTTP client owns: framing (a wrong Content-Length or Transfer-Encoding would
 * corrupt the request), the target host, and hop-by-hop headers that mean nothing end to end.
 */
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

/**
 * A config validator with the options of the request body validator (platform/validation.ts: no
 * coercion, formats on), so a config error reads like any other body error. Compiled once per type.
 */
const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: false, coerceTypes: false });
addGatewayFormats(ajv);
const compiled = new WeakMap<TSchema, ValidateFunction>();

function validatorOf(schema: TSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema as object);
    compiled.set(schema, validate);
  }
  return validate;
}

const refuse = (where: string, problem: string) =>
  invalidRequest(`Invalid request parameters: ${where} ${problem}`);

/** Ajv's first error in the words the request validator uses (errors/error-renderer.ts). */
function describeSchemaError(error: ErrorObject, path: string): string {
  const params = error.params as Record<string, unknown>;
  let field = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (typeof params.missingProperty === 'string')
    field = field ? `${field}.${params.missingProperty}` : params.missingProperty;
  if (typeof params.additionalProperty === 'string') {
    const name = field ? `${field}.${params.additionalProperty}` : params.additionalProperty;
    return `Invalid request parameters: ${path}.${name} is not a known field for this type`;
  }
  const where = field ? `${path}.${field}` : path;
  if (error.keyword === 'pattern' && params.pattern === NO_NUL_PATTERN) {
    return `Invalid request parameters: ${where} must not contain NUL characters or unpaired surrogates`;
  }
  if (Array.isArray(params.allowedValues)) {
    return `Invalid request parameters: ${where} must be one of: ${params.allowedValues.map(String).join(', ')}`;
  }
  return `Invalid request parameters: ${where} ${error.message ?? 'is invalid'}`;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The masked form of a secret: its first and last 4 characters around "..." (reference §3: `sk-l...AbCd`),
 * or `****` when it is shorter than 12 characters. Counted in code points, so a mask never splits one.
 */
export function maskSecretValue(secret: string): string {
  const characters = Array.from(secret);
  if (characters.length < MIN_LENGTH_TO_SHOW_ENDS) return FULLY_MASKED;
  return `${characters.slice(0, SHOWN_ENDS).join('')}...${characters.slice(-SHOWN_ENDS).join('')}`;
}

const isSecretField = (type: AnyDestinationType, field: string) =>
  field === 'headers' || type.secretFields.includes(field);

/** The parts of an http(s) URL that carry credentials: a userinfo password and the query's values. */
function urlCredentials(text: string): { url: URL; values: string[] } | null {
  if (!/^https?:\/\//i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const values = [...url.searchParams.values()].filter((value) => value.length > 0);
  if (url.password) values.push(decodeURIComponent(url.password));
  return url.password || values.length > 0 ? { url, values } : null;
}

/**
 * A URL as the API shows it: a userinfo password and every query value masked like a secret
 * (`?token=SUPE...3456`). Webhook and collector URLs often carry their token there (Slack-style
 * hooks, `?api_key=`), and any key of the workspace may read destinations. Other text is returned
 * as it is. Sent back in a PATCH, the masked URL keeps the stored one (`mergeConfig`).
 */
export function maskUrlCredentials(text: string): string {
  const found = urlCredentials(text);
  if (!found) return text;
  const { url } = found;
  if (url.password) url.password = maskSecretValue(decodeURIComponent(url.password));
  if (url.search) {
    const masked = new URLSearchParams();
    for (const [name, value] of url.searchParams) masked.append(name, value ? maskSecretValue(value) : value);
    url.search = masked.toString();
  }
  return url.toString();
}

/** The config as the API returns it: secret fields and every header value masked. */
export function maskConfig(type: AnyDestinationType, config: DestinationConfig): DestinationConfig {
  const masked: DestinationConfig = {};
  for (const [field, value] of Object.entries(config)) {
    if (field === 'headers' && isPlainObject(value)) {
      masked.headers = Object.fromEntries(
        Object.entries(value).map(([name, text]) => [name, maskSecretValue(String(text))]),
      );
    } else if (type.secretFields.includes(field)) {
      masked[field] = typeof value === 'string' ? maskSecretValue(value) : FULLY_MASKED;
    } else {
      masked[field] = typeof value === 'string' ? maskUrlCredentials(value) : value;
    }
  }
  return masked;
}

/** The type's defaults for the optional fields the config leaves out. */
export function applyDefaults(type: AnyDestinationType, config: DestinationConfig): DestinationConfig {
  return { ...(type.defaults as DestinationConfig), ...config };
}

/**
 * The two stored columns of a config: non-secret fields as JSON, the secret ones sealed as one
 * object. A URL that carries credentials (query values, a userinfo password: see
 * `maskUrlCredentials`) is sealed with them, so a copy of the database does not give them away.
 */
export function sealConfig(
  type: AnyDestinationType,
  config: DestinationConfig,
  secretBox: SecretBox,
): { config: string; secrets_ciphertext: string | null } {
  const plain: DestinationConfig = {};
  const secrets: DestinationConfig = {};
  for (const [field, value] of Object.entries(config)) {
    if (isSecretField(type, field) || (typeof value === 'string' && urlCredentials(value) !== null))
      secrets[field] = value;
    else plain[field] = value;
  }
  return {
    config: JSON.stringify(plain),
    secrets_ciphertext: Object.keys(secrets).length === 0 ? null : secretBox.seal(JSON.stringify(secrets)),
  };
}

/**
 * Whether a stored row keeps a credential-carrying URL in its plain `config` column: rows saved
 * before such URLs were sealed with the secrets (session 34). `resealStoredUrls` moves them.
 */
export function plainConfigHoldsCredentials(row: Pick<ObservabilityDestinationTable, 'config'>): boolean {
  let plain: unknown;
  try {
    plain = JSON.parse(row.config);
  } catch {
    return false;
  }
  if (!isPlainObject(plain)) return false;
  return Object.values(plain).some((value) => typeof value === 'string' && urlCredentials(value) !== null);
}

/**
 * The full config of a stored destination: non-secret fields, opened secrets and `headers` — what an
 * exporter is given. Throws when the secrets cannot be opened (another master key, altered data).
 */
export function openDestinationConfig(
  row: ObservabilityDestinationTable,
  secretBox: SecretBox,
): Record<string, unknown> {
  const plain: unknown = JSON.parse(row.config);
  const secrets: unknown =
    row.secrets_ciphertext === null ? {} : JSON.parse(secretBox.open(row.secrets_ciphertext));
  if (!isPlainObject(plain) || !isPlainObject(secrets)) {
    throw new Error(`observability destination ${row.id}: stored config is not a JSON object`);
  }
  return { ...plain, ...secrets };
}

/** Merges the headers of a PATCH: per name (case-insensitive), masked values ignored, null removes. */
function mergeHeaders(current: unknown, patch: unknown): unknown {
  if (patch === null) return undefined;
  if (!isPlainObject(patch)) return patch;
  const merged: Record<string, unknown> = isPlainObject(current) ? { ...current } : {};
  for (const [name, value] of Object.entries(patch)) {
    const existing = Object.keys(merged).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
    const existingValue = existing === undefined ? undefined : merged[existing];
    if (typeof existingValue === 'string' && value === maskSecretValue(existingValue)) continue;
    if (existing !== undefined) delete merged[existing];
    if (value !== null) merged[name] = value;
  }
  return Object.keys(merged).length === 0 ? undefined : merged;
}

/**
 * The config after a PATCH (spec 4.5 rule 4): only the keys given change; a secret sent back in its
 * masked form keeps its value; null removes an optional field (its default, if any, applies again).
 * The result still has to pass `checkConfig`.
 */
export function mergeConfig(
  type: AnyDestinationType,
  current: DestinationConfig,
  patch: DestinationConfig,
): DestinationConfig {
  const merged: DestinationConfig = { ...current };
  const known = configFields(type);
  for (const [field, value] of Object.entries(patch)) {
    // Refused even when null: removing a field the type does not have is a typo, not a no-op.
    if (!known.has(field)) throw refuse(`body.config.${field}`, 'is not a known field');
    if (field === 'headers') {
      if (isPlainObject(value)) {
        const seen = new Set<string>();
        for (const name of Object.keys(value)) {
          if (!HEADER_NAME.test(name))
            throw refuse(`body.config.headers.${name}`, 'is not a valid HTTP header name');
          // As a POST refuses it: one of the two would be dropped without a word.
          if (seen.has(name.toLowerCase()))
            throw refuse(`body.config.headers.${name}`, 'is given twice (header names are case-insensitive)');
          seen.add(name.toLowerCase());
        }
      }
      const headers = mergeHeaders(current.headers, value);
      if (headers === undefined) delete merged.headers;
      else merged.headers = headers;
      continue;
    }
    const currentValue = current[field];
    if (
      isSecretField(type, field) &&
      typeof currentValue === 'string' &&
      value === maskSecretValue(currentValue)
    ) {
      continue;
    }
    // A URL read with GET (its credentials masked) and sent back keeps the stored URL.
    if (
      typeof currentValue === 'string' &&
      value !== currentValue &&
      value === maskUrlCredentials(currentValue)
    ) {
      continue;
    }
    if (
      typeof value === 'string' &&
      typeof currentValue === 'string' &&
      holdsMaskedCredential(value, currentValue)
    ) {
      // Edited from a read (the path changed, say) with a credential still masked: stored as it is,
      // the mask would replace the real token, and deliveries would carry it.
      throw refuse(
        `body.config.${field}`,
        'holds a masked credential (as a read shows it): send the URL with its real query values and password, or the masked URL unchanged to keep the stored one',
      );
    }
    if (value === null) delete merged[field];
    else merged[field] = value;
  }
  return applyDefaults(type, merged);
}

/** Whether a URL carries a query value or password that is the stored URL's own, masked. */
function holdsMaskedCredential(value: string, stored: string): boolean {
  const sent = urlCredentials(value);
  const kept = urlCredentials(stored);
  if (!sent || !kept) return false;
  const masked = (given: string, real: string) => given !== real && given === maskSecretValue(real);
  if (sent.url.password && kept.url.password) {
    const password = decodeURIComponent(sent.url.password);
    if (masked(password, decodeURIComponent(kept.url.password))) return true;
  }
  for (const [name, given] of sent.url.searchParams) {
    if (kept.url.searchParams.getAll(name).some((real) => masked(given, real))) return true;
  }
  return false;
}

/** The config fields a type's schema names. */
function configFields(type: AnyDestinationType): Set<string> {
  const properties = (type.configSchema as { properties?: Record<string, unknown> }).properties ?? {};
  return new Set(Object.keys(properties));
}

/**
 * The secrets a PATCH keeps from the stored config without the client giving them again: secret
 * fields and header values it did not send, or sent back masked.
 */
export function keptSecrets(
  type: AnyDestinationType,
  current: DestinationConfig,
  patch: DestinationConfig,
): string[] {
  const kept: string[] = [];
  const given = (value: unknown, stored: string) =>
    typeof value === 'string' && value !== maskSecretValue(stored);
  for (const field of type.secretFields) {
    const stored = current[field];
    if (typeof stored === 'string' && stored.length > 0 && !given(patch[field], stored)) kept.push(field);
  }
  const headers = isPlainObject(current.headers) ? current.headers : {};
  const patchHeaders = isPlainObject(patch.headers) ? patch.headers : {};
  if (patch.headers !== null) {
    for (const [name, stored] of Object.entries(headers)) {
      if (typeof stored !== 'string') continue;
      const sent = Object.entries(patchHeaders).find(
        ([candidate]) => candidate.toLowerCase() === name.toLowerCase(),
      );
      if (sent && sent[1] === null) continue;
      if (!sent || !given(sent[1], stored)) kept.push(`headers.${name}`);
    }
  }
  return kept;
}

/** The origins (scheme, host, port) a config sends to, sorted: a change of address compares these. */
export function originsOf(type: AnyDestinationType, config: DestinationConfig, override?: string): string[] {
  const origins = new Set<string>();
  for (const url of type.urls(config)) {
    try {
      origins.add(new URL(url).origin);
    } catch {
      origins.add(url);
    }
  }
  if (override) origins.add(override);
  return [...origins].sort();
}

/**
 * How deep a config may nest. The deepest field of any type is a header (config → headers → value):
 * anything deeper is refused before a recursive check (strings, comparison, schema) walks it, so a
 * few kilobytes of brackets cannot overflow the stack.
 */
export const MAX_CONFIG_DEPTH = 8;

/**
 * Refuses a config that nests arrays or objects more than MAX_CONFIG_DEPTH levels below itself,
 * naming the first field that does (`pathTooDeep` is iterative: it is what keeps the recursive walks
 * after it safe). The config object is not a level of its own, hence the one added.
 */
export function checkConfigDepth(config: unknown, path: string): void {
  const tooDeep = pathTooDeep(config, MAX_CONFIG_DEPTH + 1);
  if (tooDeep)
    throw refuse([path, ...tooDeep].join('.'), `must not nest more than ${MAX_CONFIG_DEPTH} levels deep`);
}

/** Every string of a config (nested objects included), with where it sits. */
function* configStrings(value: unknown, path: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [path, value];
  else if (Array.isArray(value))
    for (const [index, entry] of value.entries()) yield* configStrings(entry, `${path}.${index}`);
  else if (isPlainObject(value))
    for (const [key, entry] of Object.entries(value)) yield* configStrings(entry, `${path}.${key}`);
}

/** Longest string a config field holds (keys, hosts, names, paths: nothing legitimate comes near). */
export const MAX_CONFIG_STRING = 4096;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Rules for every string of a config: bounded length, no control characters (a line break in a
 * value that becomes a header would make every delivery fail), no unpaired surrogates; secret
 * fields travel in headers, so they must also be what a header value may hold.
 */
function checkStrings(type: AnyDestinationType, config: DestinationConfig, path: string): void {
  for (const [where, value] of configStrings(config, path)) {
    if (value.length > MAX_CONFIG_STRING)
      throw refuse(where, `must NOT have more than ${MAX_CONFIG_STRING} characters`);
    if (CONTROL_CHARACTER.test(value))
      throw refuse(where, 'must not contain control characters (line breaks, NUL, …)');
    if (UNPAIRED_SURROGATE.test(value)) throw refuse(where, 'must not contain unpaired surrogates');
  }
  for (const field of [...type.secretFields, ...(type.headerFields ?? [])]) {
    const value = config[field];
    if (typeof value === 'string' && !isHeaderValue(value)) {
      throw refuse(
        `${path}.${field}`,
        'must hold only printable Latin-1 characters (it is sent in an HTTP header)',
      );
    }
  }
}

function checkHeaders(headers: unknown, path: string): void {
  if (headers === undefined) return;
  if (!isPlainObject(headers)) throw refuse(path, 'must be an object of header name → value');
  const entries = Object.entries(headers);
  if (entries.length > MAX_CUSTOM_HEADERS)
    throw refuse(path, `must not have more than ${MAX_CUSTOM_HEADERS} headers`);
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const where = `${path}.${name}`;
    if (!HEADER_NAME.test(name)) throw refuse(where, 'is not a valid HTTP header name');
    const lower = name.toLowerCase();
    if (FORBIDDEN_HEADERS.has(lower))
      throw refuse(where, 'cannot be set: the gateway sets this header itself');
    if (seen.has(lower)) throw refuse(where, 'is given twice (header names are case-insensitive)');
    seen.add(lower);
    if (typeof value !== 'string') throw refuse(where, 'must be string');
    if (value.length > MAX_HEADER_VALUE_LENGTH) {
      throw refuse(where, `must NOT have more than ${MAX_HEADER_VALUE_LENGTH} characters`);
    }
    if (!isHeaderValue(value))
      throw refuse(where, 'must not contain control characters or characters above U+00FF');
  }
}

/** Config fields whose schema says they are URLs. */
function urlFields(type: AnyDestinationType): string[] {
  const properties =
    (type.configSchema as { properties?: Record<string, { format?: unknown }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, schema]) => schema.format === 'uri')
    .map(([field]) => field);
}

/**
 * SSRF rules on every URL the destination would call: URL fields by name first, then the URLs the
 * type derives from its config (a host, a DSN), named by the field they come from when one matches.
 */
function checkUrls(
  type: AnyDestinationType,
  config: DestinationConfig,
  http: ExporterHttp,
  path: string,
): void {
  for (const field of urlFields(type)) {
    const value = config[field];
    if (typeof value !== 'string') continue;
    const refusal = http.checkUrl(value);
    if (refusal) throw refuse(`${path}.${field}`, refusal);
  }
  for (const url of type.urls(config)) {
    const refusal = http.checkUrl(url);
    if (!refusal) continue;
    // The field the URL was built from: the longest value it contains (short ones such as a
    // region code would match by chance).
    const source = Object.entries(config)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1].length >= 4)
      .filter(([, value]) => url.includes(value))
      .sort((left, right) => right[1].length - left[1].length)[0];
    throw refuse(source ? `${path}.${source[0]}` : path, `leads to a URL that ${refusal}`);
  }
}

/**
 * Validates a whole config (defaults applied) for its type: the type's schema, the custom headers,
 * the type's own rules, then the SSRF rules. Throws a 400 naming the field (`path` is where the
 * config sits in the request, e.g. `body.config`).
 */
export function checkConfig(options: {
  type: AnyDestinationType;
  config: DestinationConfig;
  http: ExporterHttp;
  path: string;
}): void {
  const { type, config, http, path } = options;
  checkConfigDepth(config, path);
  checkStrings(type, config, path);
  const validate = validatorOf(type.configSchema);
  if (!validate(config)) {
    const first = validate.errors?.[0];
    throw invalidRequest(
      first ? describeSchemaError(first, path) : `Invalid request parameters: ${path} is invalid`,
    );
  }
  checkHeaders(config.headers, `${path}.headers`);
  const problem = type.validate?.(config)[0];
  if (problem) throw refuse(`${path}.${problem.field}`, problem.message);
  checkUrls(type, config, http, path);
}

/** Canonical JSON (keys sorted at every level), to tell whether a PATCH changed the config. */
export function sameConfig(left: DestinationConfig, right: DestinationConfig): boolean {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (!isPlainObject(value)) return value;
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical(value[key])]),
    );
  };
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right));
}

/**
 * A receiver's answer as shown to the client, with the destination's secrets taken out (as given
 * and base64-encoded, alone and as `a:b` pairs as Basic auth sends them, and in the forms the type
 * says it sends them: `sentSecrets`): a receiver that echoes
 * request headers in its error body must not turn the connection test into a way to read them.
 */
export function scrubSecrets(message: string, type: AnyDestinationType, config: DestinationConfig): string {
  const secrets: string[] = [];
  for (const field of type.secretFields) {
    const value = config[field];
    if (typeof value === 'string' && value.length >= 4) secrets.push(value);
  }
  if (isPlainObject(config.headers)) {
    for (const value of Object.values(config.headers))
      if (typeof value === 'string' && value.length >= 4) secrets.push(value);
  }
  let sent: string[] = [];
  try {
    sent = type.sentSecrets?.(config as never) ?? [];
  } catch {
    // A config the type cannot read (a DSN it refuses) sends nothing composed from it.
  }
  for (const value of sent) if (value.length >= 4) secrets.push(value);
  for (const value of Object.values(config)) {
    if (typeof value !== 'string') continue;
    for (const credential of urlCredentials(value)?.values ?? [])
      if (credential.length >= 4) secrets.push(credential, encodeURIComponent(credential));
  }
  const plain = Object.values(config).filter((value): value is string => typeof value === 'string');
  const forms = new Set<string>();
  for (const secret of secrets) {
    forms.add(secret);
    forms.add(Buffer.from(secret).toString('base64'));
    for (const other of plain) {
      forms.add(Buffer.from(`${other}:${secret}`).toString('base64'));
      forms.add(Buffer.from(`${secret}:${other}`).toString('base64'));
    }
  }
  let scrubbed = message;
  for (const form of [...forms].sort((left, right) => right.length - left.length)) {
    // Base64 of a pair may be cut mid-way in a receiver's text; the whole form is what can be matched.
    scrubbed = scrubbed.replaceAll(form, '[secret]');
  }
  return scrubbed;
}
