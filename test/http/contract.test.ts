import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import {
  contractViolation,
  expectMatchesContract,
  findOperation,
  listOperations,
  toJsonSchema,
} from '../helpers/contract.js';

/** A response as inject() gives it, for hand-made bodies. */
function fake(statusCode: number, body: unknown) {
  const text = JSON.stringify(body);
  return {
    statusCode,
    body: text,
    json: () => JSON.parse(text) as unknown,
    headers: { 'content-type': 'application/json' },
  };
}

describe('contract helper on a hand-made document', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    const f = Fastify().withTypeProvider<TypeBoxTypeProvider>();
    await f.register(swagger, {
      openapi: { openapi: '3.0.3', info: { title: 't', version: '1' } },
      refResolver: { buildLocalReference: (json, _b, _f, i) => String(json.$id ?? `def-${i}`) },
    });
    const Thing = Type.Object(
      { id: Type.String(), note: Type.Union([Type.String(), Type.Null()]) },
      { $id: 'Thing', additionalProperties: false },
    );
    f.addSchema(Thing);
    f.get(
      '/api/things/:thingId',
      {
        schema: {
          params: Type.Object({ thingId: Type.String() }),
          response: {
            200: Type.Ref(Thing),
            404: Type.Object({ error: Type.String(), code: Type.String() }),
          },
        },
      },
      async () => ({ id: 'x', note: null }),
    );
    f.get('/api/things/batch', { schema: { response: { 200: Type.Object({ n: Type.Integer() }) } } }, async () => ({
      n: 1,
    }));
    f.get(
      '/api/text',
      {
        schema: {
          response: {
            200: { description: 'text', content: { 'text/plain': { schema: Type.String({ minLength: 2 }) } } },
          },
        },
      },
      async (_req, reply) => reply.type('text/plain').send('hello'),
    );
    // Declared (by default) as JSON, answered as text: the disagreement the checks must see.
    f.get('/api/json-string', { schema: { response: { 200: Type.String() } } }, async (_req, reply) =>
      reply.type('text/plain').send('hello'),
    );
    app = f as unknown as FastifyInstance;
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
  });

  it('lists documented operations', () => {
    const ops = listOperations(app).map((o) => `${o.method} ${o.path}`);
    expect([...ops].sort()).toEqual([
      'GET /api/json-string',
      'GET /api/text',
      'GET /api/things/batch',
      'GET /api/things/{thingId}',
    ]);
  });

  it('finds an operation by template, :param form or concrete URL', () => {
    expect(findOperation(app, 'get', '/api/things/{thingId}').path).toBe('/api/things/{thingId}');
    expect(findOperation(app, 'GET', '/api/things/:thingId').path).toBe('/api/things/{thingId}');
    expect(findOperation(app, 'GET', '/api/things/abc?x=1').path).toBe('/api/things/{thingId}');
    expect(findOperation(app, 'GET', '/api/things/batch').path).toBe('/api/things/batch');
    expect(() => findOperation(app, 'POST', '/api/things/batch')).toThrow(/not in the OpenAPI document/);
  });

  it('accepts a matching body, resolving component refs', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/things/abc' });
    expect(() => expectMatchesContract(app, 'GET', '/api/things/{thingId}', res)).not.toThrow();
    expect(contractViolation(app, 'GET', '/api/things/{thingId}', fake(200, { id: 'a', note: 'n' }))).toBeNull();
  });

  it('rejects a body that breaks the schema, with a readable message', () => {
    const msg = contractViolation(app, 'GET', '/api/things/{thingId}', fake(200, { id: 5, note: null, extra: 1 }));
    expect(msg).toMatch(/GET \/api\/things\/\{thingId\} → 200/);
    expect(msg).toMatch(/\/id: must be string/);
    expect(msg).toMatch(/extra/);
    expect(() => expectMatchesContract(app, 'GET', '/api/things/x', fake(404, { error: 'x' }))).toThrow(/code/);
  });

  it('checks a plain-text answer documented as a string as text; JSON routes must answer JSON', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/text' });
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    expect(() => expectMatchesContract(app, 'GET', '/api/text', res)).not.toThrow();
    const short = { statusCode: 200, body: 'h', json: () => 'h', headers: { 'content-type': 'text/plain' } };
    expect(contractViolation(app, 'GET', '/api/text', short)).toMatch(/must NOT have fewer than 2 characters/);
    const html = { ...fake(200, { id: 'a', note: null }), headers: { 'content-type': 'text/html' } };
    expect(contractViolation(app, 'GET', '/api/things/a', html)).toMatch(/Content-Type is text\/html/);
    const plain = await app.inject({ method: 'GET', url: '/api/json-string' });
    expect(contractViolation(app, 'GET', '/api/json-string', plain)).toMatch(
      /Content-Type is text\/plain, the contract documents application\/json/,
    );
  });

  it('rejects an undocumented status', () => {
    expect(contractViolation(app, 'GET', '/api/things/x', fake(500, { error: 'x', code: 'INTERNAL' }))).toMatch(
      /status 500 is not documented/,
    );
  });

  it('rejects a body that is not JSON', () => {
    const res = { statusCode: 200, body: '<html>', json: () => JSON.parse('<html>') as unknown };
    expect(contractViolation(app, 'GET', '/api/things/x', res)).toMatch(/not JSON/);
  });
});

describe('toJsonSchema', () => {
  it('turns OpenAPI 3.0 nullable into JSON Schema', () => {
    expect(toJsonSchema({ type: 'string', nullable: true })).toEqual({ type: ['string', 'null'] });
    expect(toJsonSchema({ type: 'string', enum: ['a'], nullable: true })).toEqual({
      type: ['string', 'null'],
      enum: ['a', null],
    });
    expect(toJsonSchema({ $ref: '#/components/schemas/X', nullable: true })).toEqual({
      anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }],
    });
    expect(toJsonSchema({ type: 'object', properties: { nullable: { type: 'integer', nullable: true } } })).toEqual({
      type: 'object',
      properties: { nullable: { type: ['integer', 'null'] } },
    });
  });
});

describe.each(DIALECTS)('contract helper on the Parley app (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('GET /api/health matches, a broken health body does not', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expectMatchesContract(t.app, 'GET', '/api/health', res);
    expect(contractViolation(t.app, 'GET', '/api/health', fake(200, { status: 'down', region: 'us' }))).toMatch(
      /does not match/,
    );
  });
});
