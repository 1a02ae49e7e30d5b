import type { FastifyRequest } from 'fastify';
import { ErrorSchema } from '../../errors/error-schema.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';

/** What the workspace, member and budget routes share: error statuses, tag, caller and paging. */
export const workspaceErrors = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  429: ErrorSchema,
};

export const workspaceTags = ['Workspaces'];

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('authenticated route without a principal');
  return request.principal;
}

/** Lists default to the first 50 (reference §5: `limit` 1–100). */
export const pageOf = (query: { offset?: number; limit?: number }) => ({
  offset: query.offset ?? 0,
  limit: query.limit ?? 50,
});
