import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

/** A UUID in its plain 8-4-4-4-12 hex form, either case. */
export const PLAIN_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Compiles a JSON body's schema into the validator its Fastify route uses. */
export type BodyValidatorCompiler = (schema: object) => ValidateFunction;

/**
 * Two validators: query strings and path parameters arrive as text and are coerced to the schema's
 * types; JSON bodies are not coerced, so `"limit": "10"` is refused rather than silently read as 10.
 * Returns the body compiler, for the direct lane (src/gateway/direct-lane.ts): Ajv keeps one
 * compiled function per schema object, so the lane and the route validate with the same one.
 */
export function installValidators(app: FastifyInstance): BodyValidatorCompiler {
  const common = { allErrors: false, strict: false, useDefaults: true, removeAdditional: false } as const;
  const coercing = new Ajv({ ...common, coerceTypes: 'array' });
  const exact = new Ajv({ ...common, coerceTypes: false });
  const withFormats = addFormats as unknown as (ajv: Ajv) => Ajv;
  for (const ajv of [coercing, exact]) {
    withFormats(ajv);
    // ajv-formats' uuid also takes a `urn:uuid:` prefix, which no lookup strips: such an id passed
    // the route's check and then named nothing (a 404 for a record that exists). Plain UUIDs only.
    ajv.addFormat('uuid', PLAIN_UUID);
  }
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? exact : coercing).compile(schema as object),
  );
  return (schema) => exact.compile(schema);
}
