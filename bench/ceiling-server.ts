/**
 * A reference for a read by ID on SQLite: the least a Node server can do for that read, with no
 * framework, no hooks, no logger and no error handling, so that a benchmark can show how near Parley
 * is to it, beside the bare server, in the same run. Never a product path: it answers only a
 * well-formed request of a key already seen, and 404s everything else.
 *
 * `endusers` (the default; `bench/endusers.ts --ceiling`): `GET /api/endusers/<id>` with an
 * organization key. What it does per request is what Parley must do for a cached key: check the key
 * (`keyHashOf`: shape, checksum, region, SHA-256) and find it in a `Map`; read the end user and the
 * key epoch in one prepared statement (the same SQL as Parley's, rows as arrays); make the public
 * record (`toEndUser`); serialize it with fast-json-stringify from the route's own schema (as
 * Fastify does); and write the same response headers (the security headers, `cache-control`,
 * `x-request-id`). Like Parley, it answers the requests of one turn of the event loop together,
 * just after that turn (`setImmediate`), so that a burst of answers wakes the load generator once
 * (`batchedReads` in `src/db/precompiled.ts`); answering each at once, it fell behind Parley.
 *
 * `messages` and `conversations` (`bench/reads.ts --ceiling`): `GET /api/messages/<id>` and
 * `GET /api/conversations/<id>` with an agent key, through Parley's own data layer instead of
 * statements of its own: the key checked and found as above, then Parley's read of the row and the
 * key epoch (`findMessageWithKeyEpoch`, `findConversationWithKeyEpoch`: the reads of one turn taken
 * together in one read transaction, as in Parley), the agent's check, Parley's making of the answer
 * (`toMessageResponse`, `toConversation`), serialized from the route's schema, with the same headers.
 * What is left between it and Parley is the framework, its hooks, the error handling and the log.
 *
 * `fastify` (`--lean-fastify` of both benchmarks), for any of the three reads: Parley's read as in
 * `messages` and `conversations`, served by the leanest Fastify app that can serve it (no logger, no
 * hooks, one route with its response schema): what the framework alone costs, so that the gap from
 * the `node` reference to Parley can be split between Fastify and what Parley does around it.
 *
 *   node --import tsx bench/ceiling-server.ts <sqlite file> [port] [endusers|messages|conversations] [node|fastify]
 *   DATABASE_URL=... PARLEY_PG_SCHEMA=... node --import tsx bench/ceiling-server.ts postgres [port] [read] [server]
 *   # prints `listening <port>`
 *
 * On SQLite it serves a copy of the file (`<file>.reference-<read>-<server>`, made at start), not
 * the file. With `postgres` in place of the file it serves Parley's PostgreSQL schema itself, as
 * `parley serve` would with the same environment (a pool of `PARLEY_PG_POOL_SIZE`, 10 by default),
 * through Parley's data layer for every read (the end-user read too: its reads of one turn go to
 * PostgreSQL as one statement, as Parley's do); the keys of the read's scope are read once at start.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TSchema } from '@sinclair/typebox';
import Database from 'better-sqlite3';
import fastJson from 'fast-json-stringify';
import Fastify from 'fastify';
import {
  ConversationSchema,
  EndUserSchema,
  type EndUserTable,
  findConversationWithKeyEpoch,
  findEndUserByIdWithKeyEpoch,
  findMessageWithKeyEpoch,
  keyHashOf,
  loadConfig,
  MessageResponse,
  openDatabase,
  SECURITY_HEADERS,
  toConversation,
  toEndUser,
  toMessageResponse,
} from './internals.js';

const USAGE = 'usage: ceiling-server.ts <sqlite file|postgres> [port] [endusers|messages|conversations] [node|fastify]';
const [file, portArg, route = 'endusers', kind = 'node'] = process.argv.slice(2);
if (!file || !['endusers', 'messages', 'conversations'].includes(route) || !['node', 'fastify'].includes(kind)) {
  throw new Error(USAGE);
}

/** On PostgreSQL: Parley's own database settings, from the environment `parley serve` would have. */
const postgres = file === 'postgres' ? loadConfig().regions[0]?.database : undefined;
if (file === 'postgres' && postgres?.kind !== 'postgres')
  throw new Error('ceiling-server.ts postgres: set DATABASE_URL');

/**
 * On SQLite, a copy of its own, so that Parley's database file has no second process on it while
 * Parley is measured (the two servers take turns under load).
 */
function sqliteCopy(): { copy: string; sqlite: Database.Database } {
  const copy = `${file}.reference-${route}-${kind}`;
  const source = new Database(file, { readonly: true, fileMustExist: true });
  source.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
  source.close();
  const sqlite = new Database(copy, { fileMustExist: true });
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  return { copy, sqlite };
}
const onSqlite = postgres ? undefined : sqliteCopy();

const HEADER_VALUES = {
  ...SECURITY_HEADERS,
  'cache-control': 'no-store',
  'content-type': 'application/json; charset=utf-8',
};
const HEADERS = Object.entries(HEADER_VALUES).flat();

/** What a key reads as: its organization, and its agent for an agent key. */
interface Reader {
  readonly orgId: string;
  readonly agentId: string | null;
}
const SCOPE = route === 'endusers' ? 'organization' : 'agent';
/** Key hash → reader: the key cache, filled on first use (SQLite) or at start (PostgreSQL). */
const keys = new Map<string, Reader>();
const keyByHash = onSqlite?.sqlite.prepare(
  'SELECT api_keys.org_id AS orgId, api_keys.agent_id AS agentId FROM api_keys ' +
    'JOIN organizations ON organizations.id = api_keys.org_id ' +
    'WHERE api_keys.hash = ? AND api_keys.revoked_at IS NULL AND api_keys.scope = ? ' +
    "AND organizations.plan = 'paid'",
);

function readerOf(req: IncomingMessage): Reader | undefined {
  try {
    const hash = keyHashOf('us', req.headers.authorization);
    let reader = keys.get(hash);
    if (reader === undefined && keyByHash) {
      reader = keyByHash.get(hash, SCOPE) as Reader | undefined;
      if (reader !== undefined) keys.set(hash, reader);
    }
    return reader;
  } catch {
    return undefined;
  }
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
  res.end('{"success":false}');
}

function ok(res: ServerResponse, body: string): void {
  res.writeHead(200, [...HEADERS, 'x-request-id', randomUUID(), 'content-length', String(Buffer.byteLength(body))]);
  res.end(body);
}

/** The ID in the path of this reference's route. */
const ID = new RegExp(`^/api/${route}/([^/?]{1,512})$`);

/** The ID in the request's path, decoded as Parley's router decodes it; undefined if malformed. */
function pathId(req: IncomingMessage): string | undefined {
  const raw = ID.exec(req.url ?? '')?.[1];
  try {
    return raw === undefined ? undefined : decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** `endusers`: its own prepared statement, answered synchronously in the turn's batch (below). */
function endUsers(sqlite: Database.Database): (req: IncomingMessage, res: ServerResponse) => void {
  const read = sqlite
    .prepare(
      'SELECT end_users.*, key_epoch.epoch AS key_epoch FROM key_epoch ' +
        'LEFT JOIN end_users ON end_users.id = ? AND end_users.org_id = ? WHERE key_epoch.id = 1',
    )
    .raw(true);
  const columns = read.columns().map((c) => c.name);
  // The row made by a function written for the statement's columns, as Parley's precompiled reads do.
  const toRow = new Function('v', `return { ${columns.map((name, i) => `${name}: v[${i}]`).join(', ')} };`) as (
    values: unknown[],
  ) => EndUserTable;
  const serialize = fastJson(EndUserSchema);
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const id = pathId(req);
    const reader = readerOf(req);
    const values = id && reader ? (read.get(id, reader.orgId) as unknown[] | undefined) : undefined;
    const row = values ? toRow(values) : undefined;
    if (!row?.id) return notFound(res);
    ok(res, serialize(toEndUser(row)));
  };
  /** The requests of this turn of the event loop, answered together just after it. */
  let turn: [IncomingMessage, ServerResponse][] = [];
  return (req, res) => {
    if (turn.length === 0) {
      setImmediate(() => {
        const these = turn;
        turn = [];
        for (const [q, s] of these) answer(q, s);
      });
    }
    turn.push([req, res]);
  };
}

/** A read through Parley's own data layer, and the route's schema its answer is serialized from. */
interface ParleyRead {
  readonly schema: TSchema;
  /** The answer's object; undefined when the reader may not see the row or there is none. */
  readonly answer: (id: string, reader: Reader) => Promise<unknown>;
}

/** Parley's reads, which take the requests of one turn of the event loop together themselves. */
async function parleyRead(): Promise<ParleyRead> {
  const { db } = await openDatabase(postgres ?? { kind: 'sqlite', file: onSqlite?.copy ?? '', busyTimeoutMs: 5_000 });
  if (postgres) {
    const rows = await db
      .selectFrom('api_keys')
      .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
      .select(['api_keys.hash', 'api_keys.org_id', 'api_keys.agent_id'])
      .where('api_keys.revoked_at', 'is', null)
      .where('api_keys.scope', '=', SCOPE)
      .where('organizations.plan', '=', 'paid')
      .execute();
    for (const r of rows) keys.set(r.hash, { orgId: r.org_id, agentId: r.agent_id });
  }
  const visible = (reader: Reader, agentId: string) => reader.agentId === null || agentId === reader.agentId;
  switch (route) {
    case 'messages':
      return {
        schema: MessageResponse,
        answer: async (id, reader) => {
          const { found } = await findMessageWithKeyEpoch(db, { orgId: reader.orgId, id });
          return found && visible(reader, found.message.agent_id)
            ? toMessageResponse(found.message, found.statuses)
            : undefined;
        },
      };
    case 'conversations':
      return {
        schema: ConversationSchema,
        answer: async (id, reader) => {
          const { row } = await findConversationWithKeyEpoch(db, { orgId: reader.orgId, id });
          return row && visible(reader, row.agent_id) ? toConversation(row) : undefined;
        },
      };
    default:
      return {
        schema: EndUserSchema,
        answer: async (id, reader) => {
          const { row } = await findEndUserByIdWithKeyEpoch(db, { orgId: reader.orgId, id });
          return row ? toEndUser(row) : undefined;
        },
      };
  }
}

/** `node`, for `messages` and `conversations` (and every read on PostgreSQL): Parley's read on a bare `node:http` server. */
async function nodeServer(): Promise<Server> {
  const { schema, answer } = await parleyRead();
  const serialize = fastJson(schema);
  return createServer((req, res) => {
    const id = pathId(req);
    const reader = readerOf(req);
    if (!id || !reader) return notFound(res);
    answer(id, reader).then(
      (body) => (body === undefined ? notFound(res) : ok(res, serialize(body))),
      () => notFound(res),
    );
  });
}

/**
 * `fastify`: the same read in the leanest Fastify app that can serve it (no logger, no hooks, one
 * route with its response schema, request IDs made as Parley makes them): what the framework alone
 * costs, beside the `node` reference and Parley.
 */
async function fastifyServer(): Promise<Server> {
  const { schema, answer } = await parleyRead();
  const app = Fastify({ logger: false, genReqId: () => randomUUID(), routerOptions: { maxParamLength: 1024 } });
  app.get<{ Params: { id: string } }>(
    `/api/${route}/:id`,
    { schema: { response: { 200: schema } } },
    async (request, reply) => {
      const reader = readerOf(request.raw);
      const body = reader ? await answer(request.params.id, reader) : undefined;
      if (body === undefined) return reply.code(404).send({ success: false });
      reply.headers(HEADER_VALUES).header('x-request-id', request.id);
      return body;
    },
  );
  await app.ready();
  return app.server;
}

const server =
  kind === 'fastify'
    ? await fastifyServer()
    : route === 'endusers' && onSqlite
      ? createServer(endUsers(onSqlite.sqlite))
      : await nodeServer();

server.listen(Number(portArg ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
