import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequest } from '../errors/app-error.js';

/** A UUID in its plain 8-4-4-4-12 hex form, either case. */
const PLAIN_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * ajv-formats' formats, with `uuid` in its plain form only: ajv-formats' also takes a `urn:uuid:`
 * prefix, which no lookup strips, so such an id passed the check and then named nothing (a 404 for
 * a record that exists). Every Ajv of the gateway gets these.
 */
export function addGatewayFormats(ajv: Ajv): void {
  (addFormats as unknown as (instance: Ajv) => Ajv)(ajv);
  ajv.addFormat('uuid', PLAIN_UUID);
}

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
  addGatewayFormats(coercing);
  addGatewayFormats(exact);
  app.addHook('preValidation', refuseLooseNumbers);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? exact : coercing).compile(schema as object),
  );
  return (schema) => exact.compile(schema);
}

/** A number as a query string may spell it: decimal digits, an optional sign and fraction. */
const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/** The query parameters a route's schema types as numbers, by route schema (computed once each). */
const numericParameters = new WeakMap<object, string[]>();

function numericParametersOf(schema: object): string[] {
  let names = numericParameters.get(schema);
  if (names) return names;
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
  const isNumeric = (property: unknown): boolean => {
    const { type, anyOf } = (property ?? {}) as { type?: unknown; anyOf?: unknown[] };
    if (type === 'integer' || type === 'number') return true;
    return Array.isArray(anyOf) && anyOf.some(isNumeric);
  };
  names = Object.keys(properties).filter((name) => isNumeric(properties[name]));
  numericParameters.set(schema, names);
  return names;
}

/**
 * Query parameters are coerced to their schema's type, and Ajv reads a string as a number when
 * `Number()` does: `limit=0x1`, `0b10`, `1e0`, ` 1` and `min_price=Infinity` passed as numbers (and
 * `NaN` did not). A numeric parameter must be written as a plain decimal, once: a repeated one had
 * read as "must be integer". Runs before validation, on routes whose query has numeric fields.
 */
function refuseLooseNumbers(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (error?: Error) => void,
): void {
  const schema = request.routeOptions.schema?.querystring;
  if (!schema || typeof schema !== 'object') {
    done();
    return;
  }
  const query = request.query as Record<string, unknown>;
  for (const name of numericParametersOf(schema)) {
    const value = query[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) {
      done(invalidRequest(`Invalid request parameters: querystring.${name} is given more than once`));
      return;
    }
    // Only what Ajv would take as a number: other text gets its own "must be integer" answer.
    if (typeof value === 'string' && !DECIMAL.test(value) && !Number.isNaN(Number(value))) {
      const shown = value.length > 32 ? `${value.slice(0, 32)}…` : value;
      done(
        invalidRequest(
          `Invalid request parameters: querystring.${name} must be a decimal number, got "${shown}"`,
        ),
      );
      return;
    }
  }
  done();
}
