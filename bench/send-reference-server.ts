/**
 * A reference for `POST /api/channels/send` on PostgreSQL: the least a Node server can do for a
 * template send under Parley's rules, with no framework, no hooks, no logger and no error handling,
 * so that `bench/send.ts` can show, one send at a time and in the same moments, how much of the
 * latency Parley adds any server would add on this machine. Never a product path: it answers only
 * a well-formed template send, from an agent key already seen, to someone with a live conversation
 * (what the benchmark sends after its first send to each recipient), and refuses everything else.
 *
 * What it does per send is what Parley's rules ask of any server, in the order they ask it, through
 * Parley's own statements and provider client (so the same SQL, prepared the same way, and the same
 * undici pool):
 * - the key found in a `Map` by its hash (`keyHashOf`: shape, checksum, region, SHA-256), with its
 *   agent, the agent's number and the key epoch it was read under, all read on first use;
 * - `findRecipientStoringMessage`: one statement that reads the key epoch, the recipient and their
 *   open conversation, and stores the message as pending only if that epoch is still the one the
 *   key was read under (revocation immediate, on any node) and the conversation is live, committed
 *   before the provider is called (nothing a status webhook can outrun);
 * - the provider's request (`createCloudProvider`), and its answer read;
 * - `recordAcceptance`: one statement that records the acceptance (the provider's ID, the status,
 *   the conversation's last message time), committed before the answer (a read right after the
 *   send sees it);
 * - the answer, with the security headers and a request ID; then, after it, the statuses that
 *   outran the message (`applyPendingStatuses`), as Parley does.
 * It leaves out what a send asks beyond that and costs no round trip on one node: the rate limits
 * (counted in memory without Redis), the key's last-used time (kept in memory, written every
 * 10 s), the body's validation beyond what it reads, the log line.
 *
 *   <the environment of `parley serve` on PostgreSQL> node --import tsx bench/send-reference-server.ts [port]
 *   # prints `listening <port>`
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  applyPendingStatuses,
  createCloudProvider,
  findRecipientStoringMessage,
  keyHashOf,
  loadConfig,
  messageRow,
  newId,
  openDatabase,
  recordAcceptance,
  SECURITY_HEADERS,
  sql,
} from './internals.js';

const config = loadConfig();
const region = config.regions[0];
if (region?.database.kind !== 'postgres') throw new Error('send-reference-server.ts: DATABASE_URL must be set');
const { db, close } = await openDatabase(region.database);
const provider = createCloudProvider({
  baseUrl: config.messaging.providerBaseUrl ?? '',
  version: config.messaging.providerApiVersion,
  timeoutMs: config.messaging.providerTimeoutMs,
});

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
  const { rows } = await sql<{
    org_id: string;
    agent_id: string;
    number_id: string;
    phone_number_id: string;
    epoch: number | string;
  }>`select k.org_id, k.agent_id, n.id as number_id, n.phone_number_id, e.epoch from api_keys k
      join agents a on a.id = k.agent_id join messaging_numbers n on n.id = a.number_id
      join organizations o on o.id = k.org_id cross join key_epoch e
      where k.hash = ${hash} and k.revoked_at is null and k.scope = 'agent' and o.plan = 'paid' and e.id = 1`.execute(
    db,
  );
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
  const content = { kind: 'template', name: template.name, language: template.language, header, body: params } as const;
  const input = {
    orgId: sender.orgId,
    agentId: sender.agentId,
    to,
    content,
    conversation: { origin: 'manual', required: false },
  } as const;
  const found = await findRecipientStoringMessage(db, {
    orgId: sender.orgId,
    agentId: sender.agentId,
    phone: to,
    epoch: sender.epoch,
    liveSince: now - config.conversations.idleMs,
    consentGuard: false,
    message: messageRow(input, id, sender.numberId, null, now),
  });
  const conversationId = found.known?.open?.id;
  if (!found.stored || !conversationId) return refuse(res, 409, 'no live conversation, or the key epoch moved');
  const result = await provider.send({
    phoneNumberId: sender.phoneNumberId,
    accessToken: 'sandbox',
    to,
    callbackData: id,
    content,
  });
  if (!result.ok) return refuse(res, 502, 'the provider refused');
  const { messageId } = result;
  await recordAcceptance(db, {
    id,
    providerMessageId: messageId,
    at: Date.now(),
    conversation: { id: conversationId, now },
  });
  const out = JSON.stringify({
    success: true,
    messageType: 'template',
    channel: 'msgapp',
    messageId,
    conversationId,
  });
  res.writeHead(200, { ...HEADERS, 'x-request-id': randomUUID(), 'content-length': Buffer.byteLength(out) });
  res.end(out);
  await applyPendingStatuses(db, id, messageId, sender.phoneNumberId);
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

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
const stop = () =>
  server.close(() => {
    void Promise.allSettled([close(), provider.close()]).then(() => process.exit(0));
  });
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
