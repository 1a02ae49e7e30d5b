import { randomBytes } from 'node:crypto';
import { newId } from '../../src/platform/ids.js';
import type { TestApp } from '../helpers/test-app.js';

/** A provider secret shaped like a real one, unique per call so a scan can look for it. */
export const providerSecret = (prefix = 'sk-proj-') => `${prefix}${randomBytes(24).toString('base64url')}`;

/** Adds a workspace row directly (the workspaces API is not what these tests are about). */
export async function addWorkspace(gateway: TestApp, name: string): Promise<string> {
  const id = newId();
  const at = new Date().toISOString();
  await gateway.services.storage.db
    .insertInto('workspaces')
    .values({
      id,
      name,
      slug: `${name.toLowerCase()}-${id.slice(0, 8)}`,
      description: '',
      created_by: 'test',
      default_text_model: '',
      default_image_model: '',
      default_provider_sort: '',
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      is_data_discount_logging_enabled: 0,
      is_observability_broadcast_enabled: 0,
      is_observability_io_logging_enabled: 0,
      include_byok_in_budgets: 0,
      is_default: 0,
      created_at: at,
      updated_at: at,
    })
    .execute();
  return id;
}

/** Every column of every stored credential, as one text to search. */
export async function storedCredentialsText(gateway: TestApp): Promise<string> {
  const rows = await gateway.services.storage.db.selectFrom('byok_credentials').selectAll().execute();
  return JSON.stringify(rows);
}
