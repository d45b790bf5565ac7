/**
 * A reference for `GET /api/endusers/<id>` on SQLite: the least a Node server can do for that read,
 * with no framework, no hooks, no logger and no error handling, so that a benchmark can show how
 * near Parley is to it, beside the bare server, in the same run. Never a product path: it answers
 * only a well-formed request of an organization key already seen, and 404s everything else.
 *
 * What it does per request is what Parley must do for a cached key: check the key (`keyHashOf`:
 * shape, checksum, region, SHA-256) and find it in a `Map`; read the end user and the key epoch in
 * one prepared statement (the same SQL as Parley's, rows as arrays); make the public record
 * (`toEndUser`); serialize it with fast-json-stringify from the route's own schema (as Fastify
 * does); and write the same response headers (the security headers, `cache-control`,
 * `x-request-id`). Like Parley, it answers the requests of one turn of the event loop together,
 * just after that turn (`setImmediate`), so that a burst of answers wakes the load generator once
 * (`batchedReads` in `src/db/precompiled.ts`); answering each at once, it fell behind Parley.
 *
 *   node --import tsx bench/ceiling-server.ts <sqlite file> [port]   # prints `listening <port>`
 *
 * It serves a copy of the file (`<file>.reference`, made at start), not the file itself.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import fastJson from 'fast-json-stringify';
import { keyHashOf } from '../src/auth/auth.js';
import { toEndUser } from '../src/end-users/end-user.repository.js';
import { EndUserSchema } from '../src/end-users/end-user.schemas.js';
import type { EndUserTable } from '../src/end-users/end-user.table.js';
import { SECURITY_HEADERS } from '../src/http/security-headers.js';

const [file, portArg] = process.argv.slice(2);
if (!file) throw new Error('usage: ceiling-server.ts <sqlite file> [port]');

// A copy of its own, so that Parley's database file has no second process on it while Parley is
// measured (the two servers take turns under load).
const copy = `${file}.reference`;
const source = new Database(file, { readonly: true, fileMustExist: true });
source.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
source.close();
const sqlite = new Database(copy, { fileMustExist: true });
sqlite.pragma('journal_mode = WAL');
sqlite.pragma('synchronous = NORMAL');
const keyByHash = sqlite.prepare(
  'SELECT api_keys.org_id FROM api_keys JOIN organizations ON organizations.id = api_keys.org_id ' +
    "WHERE api_keys.hash = ? AND api_keys.revoked_at IS NULL AND api_keys.scope = 'organization' " +
    "AND organizations.plan = 'paid'",
);
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
const HEADERS = Object.entries({
  ...SECURITY_HEADERS,
  'cache-control': 'no-store',
  'content-type': 'application/json; charset=utf-8',
}).flat();
const ID = /^\/api\/endusers\/([A-Za-z0-9_-]{1,64})$/;
/** Key hash → organization: the key cache, filled on first use. */
const keys = new Map<string, string>();

function answer(req: IncomingMessage, res: ServerResponse): void {
  const id = ID.exec(req.url ?? '')?.[1];
  let orgId: string | undefined;
  try {
    const hash = keyHashOf('us', req.headers.authorization);
    orgId = keys.get(hash);
    if (orgId === undefined) {
      orgId = (keyByHash.get(hash) as { org_id: string } | undefined)?.org_id;
      if (orgId !== undefined) keys.set(hash, orgId);
    }
  } catch {
    orgId = undefined;
  }
  const values = id && orgId ? (read.get(id, orgId) as unknown[] | undefined) : undefined;
  const row = values ? toRow(values) : undefined;
  if (!row?.id) {
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
    res.end('{"success":false}');
    return;
  }
  const body = serialize(toEndUser(row));
  res.writeHead(200, [...HEADERS, 'x-request-id', randomUUID(), 'content-length', String(Buffer.byteLength(body))]);
  res.end(body);
}

/** The requests of this turn of the event loop, answered together just after it. */
let turn: [IncomingMessage, ServerResponse][] = [];
const server = createServer((req, res) => {
  if (turn.length === 0) {
    setImmediate(() => {
      const these = turn;
      turn = [];
      for (const [q, s] of these) answer(q, s);
    });
  }
  turn.push([req, res]);
});

server.listen(Number(portArg ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
