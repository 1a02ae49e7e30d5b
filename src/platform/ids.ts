import { hash, randomBytes, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => uuidPattern.test(value);

/** A new API key secret: `sk-sy-v1-` and 64 hex characters (256 random bits). */
export const newApiKeySecret = (): string => `sk-sy-v1-${randomBytes(32).toString('hex')}`;

/** The only form of an API key that is stored: its SHA-256, hex. */
export const hashApiKey = (secret: string): string => hash('sha256', secret, 'hex');

/** The display label of a key: its prefix, three characters at each end of the random part. */
export function maskApiKey(secret: string): string {
  const body = secret.slice('sk-sy-v1-'.length);
  return `sk-sy-v1-${body.slice(0, 3)}...${body.slice(-3)}`;
}
