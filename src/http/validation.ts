import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

/**
 * Bodies are validated strictly: no type coercion and no silent removal of unknown fields, so
 * `"to": 123` or an unknown field is a 400 and not a quietly changed request. Query strings,
 * path parameters and headers are text on the wire, so those coerce ("50" → 50).
 */
export function installValidators(app: FastifyInstance): void {
  const common = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false } as const;
  const strictAjv = new Ajv.default({ ...common, coerceTypes: false });
  const coercingAjv = new Ajv.default({ ...common, coerceTypes: 'array' });
  addFormats.default(strictAjv);
  addFormats.default(coercingAjv);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema));
}
