import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { expectMatchesContract, listOperations, type OpenApiDocument } from '../helpers/contract.js';
import { makeKey, makeOrg } from '../helpers/factories.js';

const BASE_URL = 'https://us.api.parley.example';
const PUBLIC = new Set(['GET /api/health', 'GET /api/openapi.json', 'GET /api/ready']);

/** Every (method, path) the app routes, read from Fastify's route tree. */
function registeredRoutes(t: TestApp): { method: string; path: string }[] {
  const tree = t.app.printRoutes({ commonPrefix: false });
  const parents: string[] = [];
  const out: { method: string; path: string }[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)(?:├──|└──) (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? '').length / 4;
    const path = (parents[depth - 1] ?? '') + (m[2] ?? '');
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (m[3] ?? '').split(', ').filter(Boolean)) {
      if (method !== 'HEAD') out.push({ method, path });
    }
  }
  return out;
}

const template = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Actions named by their path alone, which take no body (one sent is ignored). */
const BODILESS_ACTIONS = new Set([
  'POST /api/conversations/{conversationId}/close',
  'POST /api/conversations/{conversationId}/release',
]);

describe.each(DIALECTS)('OpenAPI document (%s)', (dialect) => {
  let t: TestApp;
  let doc: OpenApiDocument;
  let auth: { authorization: string };

  beforeAll(async () => {
    t = await createTestApp(dialect, { env: { PARLEY_BASE_URL: `${BASE_URL}/` } });
    const res = await t.app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    doc = res.json();
    const org = await makeOrg(t.ctx);
    auth = (await makeKey(t.ctx, org.id, { permissions: ['channels', 'triggers', 'endusers'] })).auth;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is a valid OpenAPI 3.0 document (checked by an OpenAPI validator)', async () => {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
  });

  it('carries version 3.0.0, the region base address, and the Bearer scheme', () => {
    expect(doc.info.version).toBe('3.0.0');
    expect(doc.servers).toEqual([{ url: BASE_URL, description: 'United States (us)' }]);
    expect(doc.components?.securitySchemes?.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(doc.paths).some((p) => /\/v\d+\//.test(p))).toBe(false);
  });

  it('is what app.swagger() gives, and the public routes match their own contract', async () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(t.app.swagger())));
    expectMatchesContract(t.app, 'GET', '/api/health', await t.app.inject({ method: 'GET', url: '/api/health' }));
    expectMatchesContract(
      t.app,
      'GET',
      '/api/openapi.json',
      await t.app.inject({ method: 'GET', url: '/api/openapi.json' }),
    );
  });

  it('documents every /api route; an undocumented route only ever answers an error', async () => {
    const documented = new Set(listOperations(t.app).map((o) => `${o.method} ${o.path}`));
    const routes = registeredRoutes(t).filter((r) => r.path.startsWith('/api/'));
    expect(routes.length).toBeGreaterThan(2);
    const undocumented: string[] = [];
    for (const r of routes) {
      if (documented.has(`${r.method} ${template(r.path)}`)) continue;
      // The API reference page renders this document; it is not part of it.
      if (r.path === '/api/docs' || r.path.startsWith('/api/docs/')) continue;
      undocumented.push(`${r.method} ${r.path}`);
      // Hidden helper routes (405 Method Not Allowed, 400 malformed path) answer errors only.
      const url = r.path.replace(/:[A-Za-z0-9_]+/g, 'x1').replace('*', 'a/b');
      const res = await t.app.inject({
        method: r.method as 'GET',
        url,
        headers: { ...auth, 'content-type': 'application/json' },
        payload: r.method === 'GET' || r.method === 'DELETE' ? undefined : '{}',
      });
      expect(
        res.statusCode,
        `${r.method} ${r.path} is undocumented but answered ${res.statusCode}`,
      ).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
    }
    // And nothing is documented that is not routed.
    const routed = new Set(routes.map((r) => `${r.method} ${template(r.path)}`));
    for (const op of listOperations(t.app)) {
      if (op.path.startsWith('/api/'))
        expect(routed.has(`${op.method} ${op.path}`), `${op.method} ${op.path}`).toBe(true);
    }
  });

  it('protected operations declare bearerAuth and their 400/401/403 errors in an error envelope', () => {
    const ops = listOperations(t.app).filter((o) => o.path.startsWith('/api/'));
    for (const op of ops) {
      const name = `${op.method} ${op.path}`;
      if (PUBLIC.has(name)) {
        expect(op.operation.security, name).toEqual([]);
        continue;
      }
      expect(op.operation.security, name).toEqual([{ bearerAuth: [] }]);
      for (const status of ['401', '403']) {
        const schema = op.operation.responses?.[status]?.content?.['application/json']?.schema;
        expect(schema, `${name} documents ${status}`).toBeDefined();
        expect(JSON.stringify(schema), `${name} ${status}`).toMatch(
          /#\/components\/schemas\/(ChannelError|CodedError)/,
        );
      }
      const success = op.statuses.find((s) => /^2/.test(s));
      expect(success, `${name} documents a success response`).toBeDefined();
      if ((op.method === 'POST' || op.method === 'PATCH') && !BODILESS_ACTIONS.has(name)) {
        expect(op.operation.requestBody, `${name} documents its body`).toBeDefined();
        expect(op.statuses, `${name} documents 400`).toContain('400');
      }
    }
  });

  it('every operation has a unique operationId and a tag declared at the top; info.license is set', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/openapi.json' });
    const doc = res.json<OpenApiDocument & { tags: { name: string }[]; info: { license?: { name: string } } }>();
    expect(doc.info.license?.name).toBeTruthy();
    const declared = new Set(doc.tags.map((tag) => tag.name));
    const ids = new Set<string>();
    for (const op of listOperations(t.app)) {
      const name = `${op.method} ${op.path}`;
      const id = (op.operation as { operationId?: string }).operationId;
      expect(id, name).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(id ?? ''), `${name}: ${id} is used twice`).toBe(false);
      ids.add(id ?? '');
      for (const tag of (op.operation as { tags?: string[] }).tags ?? [])
        expect(declared.has(tag), `${name}: ${tag}`).toBe(true);
    }
    expect([...ids]).toEqual(
      expect.arrayContaining(['sendChannelMessage', 'startTrigger', 'getEndUser', 'listConversations']),
    );
  });

  it('bodies are named component schemas, referenced from the operations', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json<
      OpenApiDocument & { components: { schemas: Record<string, unknown> } }
    >();
    for (const name of [
      'EndUser',
      'EndUserPatch',
      'ChannelSendRequest',
      'Message',
      'Conversation',
      'ChannelError',
      'CodedError',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const send = doc.paths['/api/channels/send']?.post as {
      requestBody: { content: Record<string, { schema: unknown }> };
    };
    expect(send.requestBody.content['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/ChannelSendRequest',
    });
    const get = doc.paths['/api/endusers/{endUserId}']?.get as {
      responses: Record<string, { content: Record<string, { schema: unknown }> }>;
    };
    expect(get.responses['200']?.content['application/json']?.schema).toEqual({ $ref: '#/components/schemas/EndUser' });
  });

  it('every request and response body is a named schema, and every named schema has an example that it accepts', () => {
    const schemas = (doc.components?.schemas ?? {}) as Record<string, Record<string, unknown>>;
    const inline: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item as Record<string, Record<string, unknown>>)) {
        const op = operation as {
          requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> };
          responses?: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
        };
        const bodies = [
          ['request', op.requestBody?.content],
          ...Object.entries(op.responses ?? {}).map(([status, r]) => [status, r.content] as const),
        ] as const;
        for (const [which, content] of bodies) {
          for (const [type, media] of Object.entries(content ?? {})) {
            if (typeof media.schema?.$ref !== 'string') inline.push(`${method.toUpperCase()} ${path} ${which} ${type}`);
          }
        }
      }
    }
    expect(inline).toEqual([]);

    // OpenAPI 3.0 schemas are JSON Schema with a few keywords of their own (Ajv knows `nullable`).
    const ajv = new Ajv.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ components: { schemas } }, 'doc');
    const missing: string[] = [];
    const invalid: string[] = [];
    for (const [name, schema] of Object.entries(schemas)) {
      const example = 'example' in schema ? schema.example : (schema.examples as unknown[] | undefined)?.[0];
      if (example === undefined) {
        missing.push(name);
        continue;
      }
      const validate = ajv.compile({ $ref: `doc#/components/schemas/${name}` });
      if (!validate(example)) invalid.push(`${name}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(missing).toEqual([]);
    expect(invalid).toEqual([]);
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining(['Health', 'Readiness', 'OpenApiDocument', 'ProviderWebhook']),
    );
  });

  it('every operation has a summary, and error envelopes are components', () => {
    for (const op of listOperations(t.app)) expect(op.operation.summary, `${op.method} ${op.path}`).toBeTruthy();
    expect(doc.components?.schemas?.ChannelError).toMatchObject({ required: ['success', 'error'] });
    expect(doc.components?.schemas?.CodedError).toMatchObject({ required: ['error', 'code'] });
  });

  it('is public: no key, no 401', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/openapi.json',
      headers: { authorization: 'Bearer nope' },
    });
    expect(res.statusCode).toBe(200);
  });
});
