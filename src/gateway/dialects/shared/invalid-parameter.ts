import { type AppError, invalidRequest } from '../../../errors/app-error.js';

/**
 * The 400 for a rule the body schema cannot state, worded like the schema's own refusals
 * ("Invalid request parameters: body.models must have 3 items or fewer") so a client reads one
 * style whichever stage refused. `field` is the path (`body.tools.2.name`, `headers.x-session-id`).
 */
export const invalidParameter = (field: string, rule: string): AppError =>
  invalidRequest(`Invalid request parameters: ${field} ${rule}`);
