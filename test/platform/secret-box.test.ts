import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../../src/config/load-config.js';
import { createSecretBox, resolveMasterKey } from '../../src/platform/secret-box.js';

const masterKey = randomBytes(32).toString('hex');
const secret = 'sk-proj-0123456789abcdefghijklmnopqrstuvwxyz';

/** The same sealed text with one character of part `index` (0 = version … 3 = ciphertext) changed. */
function alterPart(sealed: string, index: number): string {
  const parts = sealed.split('.');
  const part = parts[index]!;
  // The first character carries six whole bits of data, so changing it always changes the bytes.
  parts[index] = (part[0] === 'A' ? 'B' : 'A') + part.slice(1);
  return parts.join('.');
}

describe('the secret box', () => {
  const box = createSecretBox(masterKey);

  it('opens what it sealed, and the sealed text is versioned base64url parts', () => {
    for (const plaintext of [secret, '', 'ünïcödé 🔑', 'x'.repeat(4096)]) {
      const sealed = box.seal(plaintext);
      assert.match(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/);
      assert.equal(sealed.includes(plaintext) && plaintext.length > 0, false, 'the plaintext is not visible');
      assert.equal(box.open(sealed), plaintext);
    }
  });

  it('uses a fresh IV for every seal', () => {
    const sealed = Array.from({ length: 50 }, () => box.seal(secret));
    assert.equal(new Set(sealed.map((value) => value.split('.')[1])).size, 50);
    assert.equal(new Set(sealed).size, 50);
  });

  it('refuses a value altered in any part', () => {
    const sealed = box.seal(secret);
    assert.throws(() => box.open(alterPart(sealed, 0)), /unknown format version/);
    for (const index of [1, 2, 3]) {
      assert.throws(() => box.open(alterPart(sealed, index)), /failed authentication/, `part ${index}`);
    }
    // A change only in the spare bits of the tag's last character decodes to the same bytes.
    const parts = sealed.split('.');
    const tag = parts[2]!;
    const last = tag.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const spare = alphabet[alphabet.indexOf(last) ^ 1]!;
    parts[2] = tag.slice(0, -1) + spare;
    assert.throws(() => box.open(parts.join('.')), /malformed/);
  });

  it('refuses a value sealed under another master key', () => {
    const other = createSecretBox(randomBytes(32).toString('hex'));
    assert.throws(() => other.open(box.seal(secret)), /failed authentication/);
  });

  it('refuses malformed values with a clear error, never garbage', () => {
    const sealed = box.seal(secret);
    const [version, iv, tag, ciphertext] = sealed.split('.');
    for (const bad of [
      '',
      secret,
      'v1',
      `${version}.${iv}.${tag}`,
      `${sealed}.extra`,
      `${version}.${iv}.${tag}.${ciphertext}=`,
      `${version}.${iv!.slice(1)}.${tag}.${ciphertext}`,
      `${version}.${iv}.${tag!.slice(2)}.${ciphertext}`,
      `${version}.${iv}.${tag}.not base64!`,
    ]) {
      assert.throws(() => box.open(bad), /malformed|unknown format version/, JSON.stringify(bad));
    }
  });
});

describe('resolveMasterKey', () => {
  const directories: string[] = [];
  const directory = () => {
    const path = mkdtempSync(join(tmpdir(), 'switchyard-master-key-'));
    directories.push(path);
    return path;
  };
  after(() => {
    for (const path of directories) rmSync(path, { recursive: true, force: true });
  });

  it('returns the configured key whatever the database', () => {
    const configured = 'c'.repeat(40);
    assert.equal(resolveMasterKey({ configured, databaseUrl: 'postgres://db/x' }), configured);
    const dir = directory();
    assert.equal(resolveMasterKey({ configured, databaseUrl: `sqlite:${join(dir, 'x.db')}` }), configured);
    assert.throws(() => statSync(join(dir, 'master.key')), /ENOENT/, 'no file is generated then');
  });

  it('refuses PostgreSQL without a configured key', () => {
    for (const databaseUrl of ['postgres://u@h/db', 'postgresql://u@h/db']) {
      assert.throws(
        () => resolveMasterKey({ configured: null, databaseUrl }),
        (error: unknown) =>
          error instanceof ConfigError &&
          /SWITCHYARD_MASTER_KEY .*required with PostgreSQL/.test(error.message),
      );
    }
  });

  it('generates a key file with mode 0600 beside an SQLite database, and reuses it on the next start', () => {
    const dir = directory();
    const databaseUrl = `sqlite:${join(dir, 'nested', 'switchyard.db')}`;
    const first = resolveMasterKey({ configured: null, databaseUrl });
    const path = join(dir, 'nested', 'master.key');
    assert.match(first, /^[0-9a-f]{64}$/);
    assert.equal(readFileSync(path, 'utf8'), `${first}\n`);
    if (process.platform !== 'win32') assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(resolveMasterKey({ configured: null, databaseUrl }), first);
    // No temporary file is left behind.
    assert.deepEqual(readdirSync(join(dir, 'nested')), ['master.key']);
    // What it sealed opens after a "restart".
    const sealed = createSecretBox(first).seal(secret);
    assert.equal(createSecretBox(resolveMasterKey({ configured: null, databaseUrl })).open(sealed), secret);
  });

  it('refuses a key file readable by group or others, and a malformed one', {
    skip: process.platform === 'win32',
  }, () => {
    const dir = directory();
    const databaseUrl = `sqlite:${join(dir, 'switchyard.db')}`;
    resolveMasterKey({ configured: null, databaseUrl });
    const path = join(dir, 'master.key');
    for (const mode of [0o644, 0o640, 0o604, 0o660]) {
      chmodSync(path, mode);
      assert.throws(
        () => resolveMasterKey({ configured: null, databaseUrl }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.includes(`permissions 0${mode.toString(8)}`) &&
          error.message.includes('chmod 600'),
      );
    }
    chmodSync(path, 0o600);
    writeFileSync(path, 'not a key\n');
    assert.throws(
      () => resolveMasterKey({ configured: null, databaseUrl }),
      /master key file .* is malformed/,
    );
    writeFileSync(path, '');
    assert.throws(() => resolveMasterKey({ configured: null, databaseUrl }), /malformed/);
  });

  it('keeps the key of an in-memory database in memory only', () => {
    for (const databaseUrl of ['sqlite::memory:', 'sqlite:']) {
      const first = resolveMasterKey({ configured: null, databaseUrl });
      assert.match(first, /^[0-9a-f]{64}$/);
      assert.notEqual(resolveMasterKey({ configured: null, databaseUrl }), first);
    }
  });
});
