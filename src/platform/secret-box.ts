import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Encrypts secrets the gateway must keep readable (BYOK provider keys, destination credentials):
 * AES-256-GCM, a fresh random 12-byte IV per seal. The sealed text is
 * `v1.<iv>.<tag>.<ciphertext>`, each part base64url without padding; the version leaves room for a
 * later format (a key id for master-key rotation) without guessing what an old row holds.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/**
 * HKDF inputs, fixed forever for format v1: changing either changes the derived key and makes every
 * stored secret unreadable. A fixed salt is sound here because the master key is meant to be random
 * (HKDF extracts; it does not stretch a password). The info string separates this use of the master
 * key from any later one.
 */
const HKDF_SALT = 'switchyard/secret-box/salt/v1';
const HKDF_INFO = 'switchyard/secret-box/aes-256-gcm';
/** The version is authenticated too, so a value cannot be relabelled as another format. */
const AAD = Buffer.from(VERSION, 'utf8');
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Decodes one part, refusing any text that is not the exact encoding of its bytes. */
function decodePart(text: string): Buffer | null {
  if (!BASE64URL.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  // Base64 has spare bits in its last character; a round trip catches values altered only there.
  return bytes.toString('base64url') === text ? bytes : null;
}

const malformed = () => new Error('sealed secret is malformed (expected v1.<iv>.<tag>.<ciphertext>)');

export function createSecretBox(masterKey: string): SecretBox {
  if (masterKey.length === 0) throw new Error('the master key is empty');
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(masterKey, 'utf8'), HKDF_SALT, HKDF_INFO, 32));

  return {
    seal(plaintext: string): string {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(AAD);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv, tag, ciphertext]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.');
    },

    open(sealed: string): string {
      if (typeof sealed !== 'string') throw malformed();
      const parts = sealed.split('.');
      if (parts.length !== 4) throw malformed();
      if (parts[0] !== VERSION) throw new Error(`sealed secret has an unknown format version "${parts[0]}"`);
      const [iv, tag, ciphertext] = parts.slice(1).map(decodePart);
      if (!iv || !tag || !ciphertext || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw malformed();
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(AAD);
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      } catch {
        // GCM cannot tell a wrong key from an altered value; either way nothing is returned.
        throw new Error(
          'sealed secret failed authentication: it was sealed under another master key or has been altered',
        );
      }
    },
  };
}

/** Where the master key comes from (config, or the generated file beside an SQLite database). */
export { resolveMasterKey } from '../config/master-key.js';
