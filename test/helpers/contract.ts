/**
 * Contract checks: a response must match what the app's own OpenAPI document promises.
 *
 *   const res = await t.app.inject({ method: 'GET', url: `/api/endusers/${id}`, headers });
 *   expectMatchesContract(t.app, 'GET', '/api/endusers/{endUserId}', res);
 *   expectMatchesContract(app, 'GET', '/api/health', await fromFetch(await fetch(url)));   // real HTTP
 *
 * The route path may be the OpenAPI template (`/api/endusers/{endUserId}`), the Fastify form
 * (`/api/endusers/:endUserId`) or a concrete URL (`/api/endusers/eu_123?x=1`), which is matched
 * against the documented templates. The response schema is the one of the exact status code, else
 * of its range (`4XX`), else `default`. OpenAPI 3.0 `nullable` is understood and
 * `#/components/schemas/...` references are resolved.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: JsonObject }>;
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: JsonObject[];
  requestBody?: JsonObject;
  responses?: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  servers?: { url: string; description?: string }[];
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonObject>; securitySchemes?: Record<string, JsonObject> };
}

/** One documented operation. */
export interface DocumentedOperation {
  /** Upper case, e.g. `GET`. */
  method: string;
  /** OpenAPI template, e.g. `/api/endusers/{endUserId}`. */
  path: string;
  operation: OpenApiOperation;
  /** Response keys as documented: `200`, `4XX`, `default`... */
  statuses: string[];
  /** Whether the operation requires a security scheme (an empty `security: []` means public). */
  secured: boolean;
}

/** The minimal shape of an inject() or fetch-like response this module needs. */
export interface ContractResponse {
  statusCode: number;
  body: string;
  json(): unknown;
  headers?: Record<string, unknown>;
}

interface Compiled {
  doc: OpenApiDocument;
  ajv: Ajv.default;
  components: Record<string, JsonObject>;
  validators: Map<string, ValidateFunction>;
}

const cache = new WeakMap<FastifyInstance, Compiled>();

/** The app's own OpenAPI document (the one GET /api/openapi.json serves). */
export function openApiDocument(app: FastifyInstance): OpenApiDocument {
  return compiled(app).doc;
}

function compiled(app: FastifyInstance): Compiled {
  let c = cache.get(app);
  if (!c) {
    const doc = app.swagger() as unknown as OpenApiDocument;
    const ajv = new Ajv.default({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(ajv);
    const components: Record<string, JsonObject> = {};
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      components[name] = toJsonSchema(schema) as JsonObject;
    }
    c = { doc, ajv, components, validators: new Map() };
    cache.set(app, c);
  }
  return c;
}

/**
 * Rewrites an OpenAPI 3.0 schema object into JSON Schema that ajv checks the same way:
 * `nullable: true` becomes "or null" (a type list, or an anyOf when there is no plain type).
 */
export function toJsonSchema(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    // `$id` would make ajv treat a sub-schema as a separate document; OpenAPI does not use it.
    if (key === 'nullable' || key === '$id' || key === '$schema') continue;
    if (key === 'properties' || key === 'patternProperties' || key === 'definitions' || key === '$defs') {
      const mapped: JsonObject = {};
      for (const [name, sub] of Object.entries((value ?? {}) as JsonObject)) mapped[name] = toJsonSchema(sub);
      out[key] = mapped;
    } else if (key === 'enum' || key === 'const' || key === 'example' || key === 'default' || key === 'required') {
      out[key] = value;
    } else {
      out[key] = toJsonSchema(value);
    }
  }
  if (schema.nullable !== true) return out;
  if (typeof out.type === 'string' && !('$ref' in out)) {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  if (Array.isArray(out.type)) {
    if (!out.type.includes('null')) out.type = [...out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: 'null' }] };
}

/** Every documented operation, sorted by path then method. */
export function listOperations(app: FastifyInstance): DocumentedOperation[] {
  const doc = compiled(app).doc;
  const out: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      out.push({
        method: method.toUpperCase(),
        path,
        operation,
        statuses: Object.keys(operation.responses ?? {}),
        secured: (operation.security ?? []).length > 0,
      });
    }
  }
  return out.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}

/** `:id` → `{id}`, query string dropped. */
function toTemplate(routePath: string): string {
  const path = routePath.split('?')[0] ?? routePath;
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function templateMatches(template: string, url: string): boolean {
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}$`).test(url);
}

/** Finds the documented operation for a method and a route path (template, :param form or URL). */
export function findOperation(app: FastifyInstance, method: string, routePath: string): DocumentedOperation {
  const m = method.toUpperCase();
  const ops = listOperations(app).filter((op) => op.method === m);
  const template = toTemplate(routePath);
  const exact = ops.find((op) => op.path === template);
  if (exact) return exact;
  // A concrete URL: prefer templates with fewer parameters (`/a/batch` over `/a/{id}`).
  const candidates = ops
    .filter((op) => templateMatches(op.path, template))
    .sort((a, b) => (a.path.match(/\{/g) ?? []).length - (b.path.match(/\{/g) ?? []).length);
  const found = candidates[0];
  if (found) return found;
  const documented = listOperations(app)
    .map((op) => `${op.method} ${op.path}`)
    .join('\n  ');
  throw new Error(`${m} ${routePath} is not in the OpenAPI document. Documented operations:\n  ${documented}`);
}

function responseFor(op: DocumentedOperation, status: number): { key: string; response: OpenApiResponse } | null {
  const responses = op.operation.responses ?? {};
  const keys = [String(status), `${String(status)[0]}XX`, `${String(status)[0]}xx`, 'default'];
  for (const key of keys) {
    const response = responses[key];
    if (response) return { key, response };
  }
  return null;
}

function jsonSchemaOf(response: OpenApiResponse): JsonObject | null {
  const content = response.content ?? {};
  const type = Object.keys(content).find((t) => /^application\/(.+\+)?json/.test(t)) ?? Object.keys(content)[0];
  if (!type) return null;
  return content[type]?.schema ?? null;
}

function formatErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 12)
    .map((e) => {
      const where = e.instancePath || '(body)';
      const extra =
        e.keyword === 'additionalProperties'
          ? ` '${String(e.params.additionalProperty)}'`
          : e.keyword === 'enum'
            ? ` ${JSON.stringify(e.params.allowedValues)}`
            : '';
      return `  ${where}: ${e.message ?? e.keyword}${extra}`;
    })
    .join('\n');
}

function preview(body: string): string {
  return body.length > 600 ? `${body.slice(0, 600)}…` : body;
}

/**
 * Throws a readable error unless the response's status is documented for the operation and its
 * JSON body matches the documented schema.
 */
export function expectMatchesContract(
  app: FastifyInstance,
  method: string,
  routePath: string,
  res: ContractResponse,
): void {
  const c = compiled(app);
  const op = findOperation(app, method, routePath);
  const label = `${op.method} ${op.path} → ${res.statusCode}`;
  const found = responseFor(op, res.statusCode);
  if (!found) {
    throw new Error(
      `${label}: status ${res.statusCode} is not documented (documented: ${op.statuses.join(', ') || 'none'}).\n  body: ${preview(res.body)}`,
    );
  }
  // The answer's media type must be one the response documents (a plain-text challenge documented
  // as JSON is a disagreement a client generator would trip on).
  const contentType = res.headers?.['content-type'];
  const media = typeof contentType === 'string' ? (contentType.split(';')[0] ?? '').trim().toLowerCase() : undefined;
  const content = found.response.content ?? {};
  const declared = Object.keys(content);
  if (media && declared.length > 0 && res.body.length > 0 && !declared.includes(media)) {
    throw new Error(`${label}: Content-Type is ${media}, the contract documents ${declared.join(', ')}.`);
  }
  const schema = (media ? content[media]?.schema : undefined) ?? jsonSchemaOf(found.response);
  if (!schema) {
    if (res.body.length > 0 && res.statusCode !== 204) {
      // Documented without a body schema: only require that a JSON body is JSON.
      try {
        res.json();
      } catch {
        throw new Error(`${label}: the body is not JSON.\n  body: ${preview(res.body)}`);
      }
    }
    return;
  }
  let body: unknown;
  if (media && !/^application\/(.+\+)?json$/.test(media)) {
    // A documented non-JSON answer (e.g. the webhook challenge as text/plain): check the text itself.
    body = res.body;
  } else {
    try {
      body = res.json();
    } catch {
      throw new Error(`${label}: the body is not JSON.\n  body: ${preview(res.body)}`);
    }
  }
  const cacheKey = `${op.method} ${op.path} ${found.key} ${media ?? ''}`;
  let validate = c.validators.get(cacheKey);
  if (!validate) {
    // Component schemas ride along in the compiled root so `#/components/schemas/X` resolves.
    const root = { ...(toJsonSchema(schema) as JsonObject), components: { schemas: c.components } };
    validate = c.ajv.compile(root);
    c.validators.set(cacheKey, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${label} (response '${found.key}') does not match the OpenAPI schema:\n${formatErrors(validate.errors)}\n  body: ${preview(res.body)}`,
    );
  }
}

/**
 * Adapts a fetch() Response (real HTTP) for expectMatchesContract; it reads the body, so use the
 * returned object's json() afterwards, not the Response's.
 */
export async function fromFetch(res: Response): Promise<ContractResponse> {
  const body = await res.text();
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { statusCode: res.status, body, headers, json: () => JSON.parse(body) as unknown };
}

/** Non-throwing form: the error message, or null when the response matches. */
export function contractViolation(
  app: FastifyInstance,
  method: string,
  routePath: string,
  res: ContractResponse,
): string | null {
  try {
    expectMatchesContract(app, method, routePath, res);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

interface OpenApiHeader {
  description?: string;
  schema?: JsonObject;
}

/** Throws unless each header the documented response declares is present and matches its schema. */
function checkDocumentedHeaders(c: Compiled, label: string, response: OpenApiResponse, res: ContractResponse): void {
  const documented = (response as { headers?: Record<string, OpenApiHeader> }).headers ?? {};
  for (const [name, header] of Object.entries(documented)) {
    const value = res.headers?.[name.toLowerCase()];
    if (value === undefined) throw new Error(`${label}: the documented header ${name} is missing.`);
    if (!header.schema) continue;
    const key = `header ${JSON.stringify(header.schema)}`;
    let validate = c.validators.get(key);
    if (!validate) {
      validate = c.ajv.compile(toJsonSchema(header.schema) as JsonObject);
      c.validators.set(key, validate);
    }
    if (!validate(value)) {
      throw new Error(
        `${label}: header ${name}: ${JSON.stringify(value)} does not match ${JSON.stringify(header.schema)}.`,
      );
    }
  }
}

/** A coded error body's `code` must be named in the documented response's description. */
function checkCodeDocumented(label: string, response: OpenApiResponse, res: ContractResponse): void {
  let body: unknown;
  try {
    body = res.json();
  } catch {
    return;
  }
  if (typeof body !== 'object' || body === null || !('code' in body)) return;
  const code = (body as { code: unknown }).code;
  if (typeof code === 'string' && !(response.description ?? '').includes(code)) {
    throw new Error(`${label}: the code ${code} is not named in the documented response: "${response.description}".`);
  }
}

/** Status, body schema, documented headers and (coded errors) the code, against one operation. */
function checkAgainst(app: FastifyInstance, op: DocumentedOperation, res: ContractResponse): void {
  const label = `${op.method} ${op.path} → ${res.statusCode}`;
  const found = responseFor(op, res.statusCode);
  if (!found) {
    throw new Error(
      `${label}: status ${res.statusCode} is not documented (documented: ${op.statuses.join(', ') || 'none'}).\n  body: ${preview(res.body)}`,
    );
  }
  expectMatchesContract(app, op.method, op.path, res);
  checkDocumentedHeaders(compiled(app), label, found.response, res);
  checkCodeDocumented(label, found.response, res);
}

/** Like templateMatches, but a parameter may be empty (`/api/endusers/` against `/api/endusers/{endUserId}`). */
function templateMatchesLoosely(template: string, url: string): boolean {
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]*' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}$`).test(url);
}

/**
 * Checks any response against the app's OpenAPI document, including answers for which the
 * document has no operation of that method and path, so that no status goes unchecked. The URL is
 * matched to the most specific documented path (static segments over parameters, as a router
 * does); then:
 *  - an operation of this method on that path: status, body schema, the documented response
 *    headers, and a coded error's `code` named in the response description;
 *  - HEAD: what GET documents there, with an empty body;
 *  - no operation of this method (a 405, say): the same checks against some operation of that path
 *    (e.g. its documented 405 with the Allow header);
 *  - no documented path matches (`/a/{id}/more`, or an empty parameter `/a/`): the same checks
 *    against some operation of the nearest documented path.
 */
export function expectDocumentedResponse(
  app: FastifyInstance,
  method: string,
  url: string,
  res: ContractResponse,
): void {
  const m = method.toUpperCase();
  const head = m === 'HEAD';
  const path = url.split('?')[0] ?? url;
  const ops = listOperations(app);
  if (head && res.body.length > 0) throw new Error(`HEAD ${path} → ${res.statusCode}: a HEAD answer has a body.`);
  const params = (template: string) => (template.match(/\{/g) ?? []).length;
  const best = [...new Set(ops.filter((op) => templateMatches(op.path, path)).map((op) => op.path))].sort(
    (a, b) => params(a) - params(b),
  )[0];
  let candidates: DocumentedOperation[] = [];
  if (best !== undefined) {
    const onPath = ops.filter((op) => op.path === best);
    const own = onPath.find((op) => op.method === (head ? 'GET' : m));
    candidates = own ? [own] : onPath;
  } else {
    const segments = path.split('/');
    for (let n = segments.length; n > 1 && candidates.length === 0; n--) {
      const prefix = segments.slice(0, n).join('/');
      candidates = ops.filter((op) => templateMatchesLoosely(op.path, prefix));
    }
  }
  if (candidates.length === 0) throw new Error(`${m} ${path}: no documented path covers it.`);
  const errors: string[] = [];
  for (const op of candidates) {
    try {
      if (head) {
        const found = responseFor(op, res.statusCode);
        if (!found) throw new Error(`HEAD ${op.path} → ${res.statusCode}: not documented for ${op.method}.`);
        checkDocumentedHeaders(compiled(app), `HEAD ${op.path} → ${res.statusCode}`, found.response, res);
      } else {
        checkAgainst(app, op, res);
      }
      return;
    } catch (err) {
      errors.push(err instanceof Error ? err.message : String(err));
    }
  }
  throw new Error(`${m} ${path} → ${res.statusCode} matches no documented answer:\n${errors.join('\n')}`);
}

/** Non-throwing form of expectDocumentedResponse: the error message, or null. */
export function documentedResponseViolation(
  app: FastifyInstance,
  method: string,
  url: string,
  res: ContractResponse,
): string | null {
  try {
    expectDocumentedResponse(app, method, url, res);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
