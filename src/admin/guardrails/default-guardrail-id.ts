import { createHash } from 'node:crypto';

/**
 * The id of a workspace's default guardrail: a name-based (version 5 style) UUID derived from the
 * workspace id, so every instance agrees on it before the guardrail is first materialized (reference
 * §4.4: the default guardrail exists from the start and is stored on its first PATCH).
 */
export function defaultGuardrailId(workspaceId: string): string {
  const bytes = createHash('sha1')
    .update(`switchyard:default-guardrail:${workspaceId}`)
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Reference §4.4: the default guardrail's name, which cannot be changed. */
export const defaultGuardrailName = (workspaceId: string): string => `Workspace ${workspaceId} Default`;
