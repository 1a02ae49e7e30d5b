import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from './load-config.js';

/** The generated key's file, beside the SQLite database; its text is 64 hex characters and a newline. */
export const MASTER_KEY_FILE = 'master.key';
const GENERATED_KEY = /^[0-9a-f]{64}$/;
const MIN_CONFIGURED_LENGTH = 32;
/** Errors of filesystems without hard links; there the file is written in place instead. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code;

function readKeyFile(path: string): string {
  const stats = statSync(path);
  if (!stats.isFile()) throw new ConfigError(`master key file ${path} is not a regular file`);
  // Windows has no POSIX modes; Node reports 0666 for every file there, so the check would refuse all.
  if (process.platform !== 'win32' && (stats.mode & 0o077) !== 0) {
    const mode = (stats.mode & 0o777).toString(8).padStart(4, '0');
    throw new ConfigError(
      `master key file ${path} has permissions ${mode}: it must be readable by its owner only (run: chmod 600 ${path})`,
    );
  }
  const text = readFileSync(path, 'utf8');
  const key = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (!GENERATED_KEY.test(key)) {
    throw new ConfigError(
      `master key file ${path} is malformed (expected 64 hex characters); restore it from a backup, since stored secrets cannot be read without it`,
    );
  }
  return key;
}

/**
 * Creates the key file unless it exists; the key, or null when another process created it first.
 * The key is written and flushed under a temporary name, then hard-linked into place: the name
 * appears with its whole content or not at all, and a process starting at the same moment either
 * wins the link or reads the winner's key.
 */
function createKeyFile(path: string): string | null {
  const key = randomBytes(32).toString('hex');
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const write = (target: string) => {
    const fd = openSync(target, 'wx', 0o600);
    try {
      writeSync(fd, `${key}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  };
  write(temporary);
  try {
    linkSync(temporary, path);
    return key;
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return null;
    if (!NO_HARD_LINKS.has(codeOf(error) ?? '')) throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  try {
    write(path);
    return key;
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return null;
    throw error;
  }
}

/**
 * The master key that encrypts stored secrets: `master_key` (SWITCHYARD_MASTER_KEY) when set.
 * Otherwise, for the embedded SQLite default only, a random key generated once and kept in
 * `<database directory>/master.key` (mode 0600). PostgreSQL deployments may run several instances,
 * which must all share one key, so there a missing key stops the start.
 */
export function resolveMasterKey(options: { configured: string | null; databaseUrl: string }): string {
  if (options.configured !== null) {
    if (options.configured.length < MIN_CONFIGURED_LENGTH) {
      throw new ConfigError(
        `master_key (SWITCHYARD_MASTER_KEY) must be at least ${MIN_CONFIGURED_LENGTH} characters`,
      );
    }
    return options.configured;
  }
  if (!options.databaseUrl.startsWith('sqlite:')) {
    throw new ConfigError(
      'SWITCHYARD_MASTER_KEY (master_key) is required with PostgreSQL: every instance must encrypt and read stored secrets with the same key. Generate one with `openssl rand -hex 32` and give it to every instance.',
    );
  }
  // The same reading of the URL as storage/database.ts: an empty path is an in-memory database.
  const databasePath = options.databaseUrl.slice('sqlite:'.length) || ':memory:';
  if (databasePath === ':memory:') {
    // The database lives only as long as this process, and so may the key: it is kept in memory.
    return randomBytes(32).toString('hex');
  }
  const path = join(dirname(databasePath), MASTER_KEY_FILE);
  try {
    try {
      return readKeyFile(path);
    } catch (error) {
      if (codeOf(error) !== 'ENOENT') throw error;
    }
    mkdirSync(dirname(path), { recursive: true });
    return createKeyFile(path) ?? readKeyFile(path);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read or create the master key file ${path}: ${(error as Error).message}`);
  }
}
