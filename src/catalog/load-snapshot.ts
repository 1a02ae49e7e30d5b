import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Snapshot } from './snapshot-types.js';

/** The snapshot shipped with Switchyard: `catalog-data/` at the package root (same path from src/ and dist/). */
export const bundledSnapshotDir = fileURLToPath(new URL('../../catalog-data/', import.meta.url));

export class SnapshotError extends Error {
  override name = 'SnapshotError';
}

function readArray(directory: string, file: string, required: string[]): Record<string, unknown>[] {
  const path = join(directory, file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new SnapshotError(`catalogue file ${path} cannot be read: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new SnapshotError(`catalogue file ${path} must hold a JSON array`);
  parsed.forEach((row, index) => {
    if (typeof row !== 'object' || row === null)
      throw new SnapshotError(`${path}[${index}] is not an object`);
    for (const field of required) {
      if (!(field in row)) throw new SnapshotError(`${path}[${index}] lacks "${field}"`);
    }
  });
  return parsed as Record<string, unknown>[];
}

/** Reads the four snapshot files, checking the fields the catalogue relies on. Done once, at start. */
export function loadSnapshot(directory: string = bundledSnapshotDir): Snapshot {
  return {
    models: readArray(directory, 'models.json', [
      'id',
      'canonical_slug',
      'name',
      'created',
      'context_length',
      'architecture',
      'pricing',
      'supported_parameters',
    ]) as unknown as Snapshot['models'],
    endpoints: readArray(directory, 'endpoints.json', [
      'model',
      'model_permaslug',
      'provider_slug',
      'provider_name',
      'pricing',
      'data_policy',
      'status',
    ]) as unknown as Snapshot['endpoints'],
    providers: readArray(directory, 'providers.json', ['slug', 'name']) as unknown as Snapshot['providers'],
    usage: readArray(directory, 'usage-daily.json', [
      'date',
      'model_permaslug',
      'variant',
      'count',
    ]) as unknown as Snapshot['usage'],
  };
}
