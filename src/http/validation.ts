import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

/**
 * Bodies are validated strictly: no type coercion and no silent removal of unknown fields, so
 * `"to": 123` or an unknown field is a 400 and not a quietly changed request. Query strings,
 * path parameters and headers are text on the wire, so those coerce ("50" → 50).
 */
export function installValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => compiled(httpPart === 'body' ? 'strict' : 'coercing', schema));
}

type Kind = 'strict' | 'coercing';

/**
 * One validator per schema and kind in the process, shared by its apps (the regions of
 * `serve --regions`, an app per test): a validator depends only on its schema and its Ajv options,
 * and compiling them all is most of the CPU an app takes to build. Keyed by the schema's JSON, as
 * an app may build its schemas afresh.
 */
const validators = new Map<string, ValidateFunction>();
let ajvs: Record<Kind, Ajv.default> | undefined;

function compiled(kind: Kind, schema: object): ValidateFunction {
  const key = `${kind} ${JSON.stringify(schema)}`;
  const known = validators.get(key);
  if (known) return known;
  ajvs ??= { strict: makeAjv(false), coercing: makeAjv('array') };
  const validate = ajvs[kind].compile(schema);
  validators.set(key, validate);
  return validate;
}

function makeAjv(coerceTypes: false | 'array'): Ajv.default {
  const ajv = new Ajv.default({
    allErrors: false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    coerceTypes,
  });
  addFormats.default(ajv);
  return ajv;
}
