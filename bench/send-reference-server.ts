/**
 * A reference for `POST /api/channels/send` on PostgreSQL: the least a Node server can do for a
 * template send under Parley's rules, with no framework, no hooks, no logger and no error handling,
 * so that `bench/send.ts` can show, one send at a time and in the same moments, how much of the
 * latency Parley adds any server would add on this machine. Never a product path: it answers only
 * a well-formed template send, from an agent key already seen, to someone with a live conversation
 * (what the benchmark sends after its first send to each recipient), and refuses everything else.
 *
 * What it does per send is what Parley's rules ask of any server, in the order they ask it:
 * - the key found in a `Map` by its hash (`keyHashOf`: shape, checksum, region, SHA-256), with its
 *   agent, the agent's number and the key epoch it was read under, all read on first use;
 * - one statement that reads the key epoch, the recipient and their open conversation, and stores
 *   the message as pending only if that epoch is still the one the key was read under (revocation
 *   immediate, on any node) and the conversation is live: Parley's own statement on PostgreSQL,
 *   the same text, committed before the provider is called (nothing a status webhook can outrun);
 * - the provider's request (`toWireBody`, undici with Parley's pool settings), and its answer read;
 * - one statement that records the acceptance (the provider's ID, the status, the conversation's
 *   last message time), committed before the answer (a read right after the send sees it);
 * - the answer, with the security headers and a request ID; then, after it, the read of statuses
 *   that outran the message, as Parley does.
 * It leaves out what a send asks beyond that and costs no round trip on one node: the rate limits
 * (counted in memory without Redis), the key's last-used time (kept in memory, written every
 * 10 s), the body's validation beyond what it reads, the log line.
 *
 *   DATABASE_URL=postgres://... PARLEY_PG_SCHEMA=<schema> \
 *     node --import tsx bench/send-reference-server.ts <provider base URL> [port]   # prints `listening <port>`
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Agent, request } from 'undici';
import { keyHashOf } from '../src/auth/auth.js';
import { SECURITY_HEADERS } from '../src/http/security-headers.js';
import { STATUS_RANK } from '../src/messaging/message.repository.js';
import { toWireBody } from '../src/messaging/provider.js';
import { newId } from '../src/shared/ids.js';

const [providerBase, portArg] = process.argv.slice(2);
const url = process.env.DATABASE_URL;
const schema = process.env.PARLEY_PG_SCHEMA;
if (!providerBase || !url || !schema) {
  throw new Error('usage: DATABASE_URL=... PARLEY_PG_SCHEMA=... send-reference-server.ts <provider base URL> [port]');
}
/** How long a conversation stays live without a message: Parley's default. */
const IDLE_MS = 24 * 60 * 60 * 1000;

const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
const provider = new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });

const KEY = {
  name: 'reference-key',
  text:
    'select k.org_id, k.agent_id, n.id as number_id, n.phone_number_id, e.epoch from api_keys k ' +
    'join agents a on a.id = k.agent_id join messaging_numbers n on n.id = a.number_id ' +
    'join organizations o on o.id = k.org_id cross join key_epoch e ' +
    "where k.hash = $1 and k.revoked_at is null and k.scope = 'agent' and o.plan = 'paid' and e.id = 1",
};
// Parley's statements on PostgreSQL, word for word (as PostgreSQL logs them).
const STORE = {
  name: 'reference-store',
  text:
    'with "r" as (select "key_epoch"."epoch" as "key_epoch", "u"."id" as "u_id", "u"."name" as "u_name", "u"."email" as "u_email", ' +
    '"c"."id", "c"."org_id", "c"."agent_id", "c"."end_user_id", "c"."trigger_id", "c"."campaign_id", "c"."status", "c"."context", ' +
    '"c"."started_at", "c"."last_message_at", "c"."closed_at", "c"."updated_at" from "key_epoch" ' +
    'left join "end_users" as "u" on "u"."org_id" = $1 and "u"."phone" = $2 ' +
    'left join "conversations" as "c" on "c"."org_id" = "u"."org_id" and "c"."end_user_id" = "u"."id" and "c"."agent_id" = $3 ' +
    'and "c"."status" = \'open\' where "key_epoch"."id" = $4), ' +
    '"stored" as (insert into "messages" ("id", "org_id", "agent_id", "number_id", "to_phone", "type", "template_name", ' +
    '"provider_message_id", "status", "status_rank", "error_code", "error_message", "created_at", "updated_at", "text", ' +
    '"template_language", "template_parameters", "conversation_id") select cast($5 as text) as "id", cast($6 as text) as "org_id", ' +
    'cast($7 as text) as "agent_id", cast($8 as text) as "number_id", cast($9 as text) as "to_phone", cast($10 as text) as "type", ' +
    'cast($11 as text) as "template_name", cast($12 as text) as "provider_message_id", cast($13 as text) as "status", ' +
    'cast($14 as integer) as "status_rank", cast($15 as integer) as "error_code", cast($16 as text) as "error_message", ' +
    'cast($17 as bigint) as "created_at", cast($18 as bigint) as "updated_at", cast($19 as text) as "text", ' +
    'cast($20 as text) as "template_language", cast($21 as text) as "template_parameters", "r"."id" as "conversation_id" ' +
    'from "r" where "r"."key_epoch" = $22 and "r"."id" is not null and "r"."last_message_at" >= $23 returning "id") ' +
    'select "r".*, (select count(*) as "n" from "stored") as "stored" from "r"',
};
const ACCEPT = {
  name: 'reference-accept',
  text:
    'with "accepted" as (update "messages" set "provider_message_id" = $1, "status" = case when status_rank < $2 then \'accepted\' ' +
    'else status end, "status_rank" = case when status_rank < $3 then $4 else status_rank end, "updated_at" = $5 where "id" = $6 ' +
    'returning "id") update "conversations" set "last_message_at" = case when last_message_at < $7 then $8 else last_message_at end, ' +
    '"updated_at" = $9 where "id" = $10',
};
const OUTRAN = { name: 'reference-outran', text: 'select * from "pending_statuses" where "provider_message_id" = $1' };

interface Sender {
  readonly orgId: string;
  readonly agentId: string;
  readonly numberId: string;
  readonly phoneNumberId: string;
  readonly epoch: number;
}
/** Key hash → what the key sends as: the key cache, filled on first use. */
const keys = new Map<string, Sender>();

async function senderOf(authorization: string | undefined): Promise<Sender | undefined> {
  const hash = keyHashOf('us', authorization);
  const known = keys.get(hash);
  if (known) return known;
  const { rows } = await pool.query(KEY.text, [hash]);
  const row = rows[0];
  if (!row) return undefined;
  const sender = {
    orgId: row.org_id,
    agentId: row.agent_id,
    numberId: row.number_id,
    phoneNumberId: row.phone_number_id,
    epoch: Number(row.epoch),
  };
  keys.set(hash, sender);
  return sender;
}

const HEADERS = { ...SECURITY_HEADERS, 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' };

function refuse(res: ServerResponse, status: number, why: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ success: false, error: why }));
}

async function send(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
  const sender = await senderOf(req.headers.authorization);
  if (!sender || req.url !== '/api/channels/send') return refuse(res, 404, 'not a send this reference answers');
  const body = JSON.parse(raw) as {
    to: string;
    template: { name: string; language: string; parameters?: { header?: string[]; body?: string[] } };
  };
  const { to, template } = body;
  const header = template.parameters?.header ?? [];
  const params = template.parameters?.body ?? [];
  const id = newId('msg');
  const now = Date.now();
  const stored = await pool.query({
    ...STORE,
    values: [
      sender.orgId,
      to,
      sender.agentId,
      1,
      id,
      sender.orgId,
      sender.agentId,
      sender.numberId,
      to,
      'template',
      template.name,
      null,
      'pending',
      STATUS_RANK.pending,
      null,
      null,
      now,
      now,
      null,
      template.language,
      JSON.stringify({ body: params, header }),
      sender.epoch,
      now - IDLE_MS,
    ],
  });
  const found = stored.rows[0];
  if (!found || Number(found.stored) !== 1) return refuse(res, 409, 'no live conversation, or the key epoch moved');
  const answer = await request(`${providerBase}/v25.0/${encodeURIComponent(sender.phoneNumberId)}/messages`, {
    method: 'POST',
    dispatcher: provider,
    headers: { authorization: 'Bearer sandbox', 'content-type': 'application/json' },
    body: JSON.stringify(
      toWireBody({
        phoneNumberId: sender.phoneNumberId,
        accessToken: 'sandbox',
        to,
        callbackData: id,
        content: { kind: 'template', name: template.name, language: template.language, header, body: params },
      }),
    ),
  });
  const wire = (await answer.body.json()) as { messages?: { id?: string }[] };
  const messageId = wire.messages?.[0]?.id;
  if (answer.statusCode !== 200 || typeof messageId !== 'string') return refuse(res, 502, 'the provider refused');
  const at = Date.now();
  const accepted = STATUS_RANK.accepted;
  await pool.query({ ...ACCEPT, values: [messageId, accepted, accepted, accepted, at, id, now, now, now, found.id] });
  const out = JSON.stringify({
    success: true,
    messageType: 'template',
    channel: 'msgapp',
    messageId,
    conversationId: found.id,
  });
  res.writeHead(200, { ...HEADERS, 'x-request-id': randomUUID(), 'content-length': Buffer.byteLength(out) });
  res.end(out);
  await pool.query({ ...OUTRAN, values: [messageId] });
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    send(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
      if (!res.headersSent) refuse(res, 500, err instanceof Error ? err.message : String(err));
    });
  });
});

server.listen(Number(portArg ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
const stop = () =>
  server.close(() => {
    void Promise.allSettled([pool.end(), provider.close()]).then(() => process.exit(0));
  });
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
