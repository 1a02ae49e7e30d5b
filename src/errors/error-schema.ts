import { Type } from 'typebox';

/** The spec 2.1 envelope, for route response schemas and the OpenAPI document. */
export const ErrorSchema = Type.Object({
  error: Type.Object({
    code: Type.Integer(),
    message: Type.String(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
});
