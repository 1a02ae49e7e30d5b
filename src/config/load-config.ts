import { readFileSync } from 'node:fs';
import { Value } from 'typebox/value';
import { parse as parseYaml } from 'yaml';
import { type Config, ConfigSchema, defaultConfig } from './config-schema.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Environment = Readonly<Record<string, string | undefined>>;
type PlainObject = Record<string, unknown>;

/** Environment variables that map onto a top-level setting, with how to read them. */
const envSettings: ReadonlyArray<{ env: string; key: string; kind: 'string' | 'integer' }> = [
  { env: 'PORT', key: 'port', kind: 'integer' },
  { env: 'HOST', key: 'host', kind: 'string' },
  { env: 'PUBLIC_URL', key: 'public_url', kind: 'string' },
  { env: 'DATABASE_URL', key: 'database_url', kind: 'string' },
  { env: 'DATABASE_SCHEMA', key: 'database_schema', kind: 'string' },
  { env: 'REDIS_URL', key: 'redis_url', kind: 'string' },
  { env: 'REDIS_PREFIX', key: 'redis_prefix', kind: 'string' },
  { env: 'SWITCHYARD_MASTER_KEY', key: 'master_key', kind: 'string' },
  { env: 'SWITCHYARD_BOOTSTRAP_KEY', key: 'bootstrap_key', kind: 'string' },
  { env: 'LOG_LEVEL', key: 'log_level', kind: 'string' },
];

const providerKeyEnv = /^([A-Z0-9]+(?:_[A-Z0-9]+)*)_API_KEY$/;

function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readFile(path: string): PlainObject {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(
      `config file ${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed))
    throw new ConfigError(`config file ${path} must hold an object at the top level`);
  return parsed;
}

/** Replaces `${NAME}` in every string of the file with the environment variable's value. */
function interpolate(value: unknown, env: Environment, path: string): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) throw new ConfigError(`${path}: environment variable ${name} is not set`);
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, `${path}[${index}]`));
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        interpolate(item, env, path ? `${path}.${key}` : key),
      ]),
    );
  }
  return value;
}

function mergeDefaults(defaults: unknown, override: unknown): unknown {
  if (!isPlainObject(defaults) || !isPlainObject(override))
    return override === undefined ? defaults : override;
  const merged: PlainObject = { ...defaults };
  for (const [key, value] of Object.entries(override)) merged[key] = mergeDefaults(defaults[key], value);
  return merged;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

function describeErrors(candidate: unknown, envNames: Map<string, string>): string {
  return [...Value.Errors(ConfigSchema, candidate)]
    .filter((error) => error.keyword !== 'boolean')
    .slice(0, 5)
    .map((error) => {
      const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.') || '(top level)';
      const extra = (error.params as { additionalProperties?: string[] }).additionalProperties;
      if (extra) return `${path === '(top level)' ? '' : `${path}.`}${extra.join(', ')}: unknown key`;
      // A setting that came from the environment is named by its variable too (PORT, not only port).
      const variable = envNames.get(path);
      return `${path}${variable ? ` (${variable})` : ''}: ${error.message}`;
    })
    .join('; ');
}

/**
 * Reads the configuration once: defaults, then the file named by SWITCHYARD_CONFIG, then the
 * environment (which wins). The result is validated and frozen; nothing else reads process.env.
 */
export function loadConfig(env: Environment = process.env, overrides: PlainObject = {}): Config {
  const filePath = env.SWITCHYARD_CONFIG;
  const file = filePath ? (interpolate(readFile(filePath), env, '') as PlainObject) : {};
  const fromEnv: PlainObject = {};
  const envNames = new Map<string, string>();
  for (const { env: name, key, kind } of envSettings) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (kind === 'integer') {
      if (!/^\d+$/.test(raw)) throw new ConfigError(`${name}: must be an integer, got "${raw}"`);
      fromEnv[key] = Number(raw);
    } else {
      fromEnv[key] = raw;
    }
    envNames.set(key, name);
  }
  // A copy of the defaults, so freezing the result never freezes defaultConfig itself.
  const candidate = mergeDefaults(
    mergeDefaults(mergeDefaults(structuredClone(defaultConfig), file), fromEnv),
    overrides,
  ) as PlainObject;
  // <PROVIDER>_API_KEY fills a provider's api_key unless the file set one. A `providers` (or a
  // provider entry) that is not an object is left as it is, so validation reports it.
  if (isPlainObject(candidate.providers)) {
    const providers: PlainObject = { ...candidate.providers };
    for (const [name, value] of Object.entries(env)) {
      const match = providerKeyEnv.exec(name);
      if (!match?.[1] || !value || name.startsWith('SWITCHYARD_')) continue;
      const slug = match[1].toLowerCase().replaceAll('_', '-');
      const current = providers[slug] === undefined ? {} : providers[slug];
      if (isPlainObject(current) && current.api_key === undefined)
        providers[slug] = { ...current, api_key: value };
    }
    candidate.providers = providers;
  }
  if (!Value.Check(ConfigSchema, candidate)) {
    throw new ConfigError(`invalid configuration: ${describeErrors(candidate, envNames)}`);
  }
  const { broadcast } = candidate as unknown as Config;
  if (broadcast.batch_linger_ms * 4 > broadcast.lease_ms) {
    // Handed-over events are stored leased; a linger eating the lease would hand them all back.
    throw new ConfigError(
      `invalid configuration: broadcast.batch_linger_ms (${broadcast.batch_linger_ms}) must be at most a quarter of broadcast.lease_ms (${broadcast.lease_ms})`,
    );
  }
  return deepFreeze(candidate) as Config;
}
