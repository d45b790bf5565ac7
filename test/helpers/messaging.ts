import { randomInt } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { AppContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import type { MessageTable } from '../../src/messaging/messaging.tables.js';
import { addNumber, assignNumber } from '../../src/numbers/number.service.js';
import { providerJson, type Sandbox, signBody } from '../../src/sandbox/index.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, PG_URL, type TestApp, type TestAppOptions, type TestDialect } from './app.js';
import { makeAgent, makeKey, makeTenant } from './factories.js';
import { call } from './http.js';

export interface MessagingTestApp extends TestApp {
  /** Parley's own address (it listens on an ephemeral port so the sandbox can call its webhook). */
  readonly url: string;
  readonly sandbox: Sandbox;
  /** Waits until the sandbox has sent every webhook and Parley has processed them. */
  settle(): Promise<void>;
}

export interface MessagingAppOptions extends TestAppOptions {
  /** false: the sandbox sends no webhooks (tests that post statuses themselves). */
  webhooks?: boolean;
}

/** A test app listening for real, with the in-process sandbox pointed at its webhook. */
export async function createMessagingApp(
  dialect: TestDialect,
  options: MessagingAppOptions = {},
): Promise<MessagingTestApp> {
  const t = quiet(await createTestApp(dialect, options));
  const sandbox = t.ctx.messaging.sandbox;
  if (!sandbox) throw new Error('the messaging tests expect the built-in sandbox');
  const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  if (options.webhooks !== false) sandbox.setWebhookUrl(`${url}/webhooks/msgapp`);
  return {
    ...t,
    url,
    sandbox,
    async settle() {
      await sandbox.idle();
      await t.ctx.messaging.webhooks.idle();
    },
  };
}

/**
 * Request logs at the test log level (TEST_LOG_LEVEL, default silent): the app raises its request
 * logger to `warn` when request logging is off, so the 502 tests would print "upstream failure".
 */
export function quiet<T extends TestApp>(t: T): T {
  t.app.log.level = t.ctx.logger.level;
  return t;
}

/** A test app (no sandbox needed) with quiet request logs. */
export async function createQuietTestApp(dialect: TestDialect, options: TestAppOptions = {}): Promise<TestApp> {
  return quiet(await createTestApp(dialect, options));
}

/** A random, valid US number (650 area code, exchange 2xx-9xx). */
export function randomPhone(): string {
  return `+1650${randomInt(2, 10)}${String(randomInt(0, 1_000_000)).padStart(6, '0')}`;
}

export async function makeNumber(ctx: AppContext, orgId: string, phone = randomPhone()) {
  return addNumber(ctx.db, ctx.clock, ctx.messaging.secrets, { orgId, phone });
}

/** A paid organization whose agent has a sandbox number; plus a second agent in the same org. */
export async function makeSendingTenant(ctx: AppContext) {
  const tenant = await makeTenant(ctx);
  const number = await makeNumber(ctx, tenant.org.id);
  await assignNumber(ctx.db, tenant.org.id, tenant.agent.id, number.phone);
  const other = await makeAgent(ctx, tenant.org.id);
  const otherKey = await makeKey(ctx, tenant.org.id, { scope: 'agent', agentId: other.id, permissions: ['channels'] });
  return { ...tenant, number, other, otherKey };
}

/**
 * A row of `messages` as a template send stores it (`hello_world`, `en_US`, no conversation), for a
 * test to insert directly: `accepted` by the provider under `providerMessageId`, or still `pending`
 * without one; `extra` overrides any column.
 */
export function templateMessageRow(
  of: { orgId: string; agentId: string; numberId: string; providerMessageId: string | null; at: number },
  extra: Partial<MessageTable> = {},
): MessageTable {
  const accepted = of.providerMessageId !== null;
  return {
    id: `msg_${randomBase62(16)}`,
    org_id: of.orgId,
    agent_id: of.agentId,
    number_id: of.numberId,
    to_phone: randomPhone(),
    type: 'template',
    template_name: 'hello_world',
    provider_message_id: of.providerMessageId,
    status: accepted ? 'accepted' : 'pending',
    status_rank: accepted ? 1 : 0,
    error_code: null,
    error_message: null,
    created_at: of.at,
    updated_at: of.at,
    conversation_id: null,
    text: null,
    template_language: 'en_US',
    template_parameters: null,
    ...extra,
  };
}

export const templateSend = (convId?: string, to = randomPhone()) => ({
  channel: 'msgapp',
  to,
  type: 'template',
  ...(convId ? { convId } : {}),
  template: { name: 'hello_world', language: 'en_US' },
});

/** `POST /api/channels/send` of a template (`templateSend()`) with a key's `auth` headers. */
export function postTemplateSend(t: Pick<TestApp, 'app'>, auth: Record<string, string>) {
  return t.app.inject({ method: 'POST', url: '/api/channels/send', headers: auth, payload: templateSend() });
}

export const textSend = (convId: string | undefined, to: string, text = 'Hello there') => ({
  channel: 'msgapp',
  to,
  type: 'message',
  ...(convId ? { convId } : {}),
  message: { text },
});

/** A webhook body signed as the provider would sign it. */
export function signedWebhook(appSecret: string, payload: unknown): { body: string; headers: Record<string, string> } {
  const body = providerJson(payload);
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signBody(appSecret, body) },
  };
}

export function statusPayload(
  phoneNumberId: string,
  statuses: { id: string; status: string; timestamp: number; errors?: unknown[]; callback?: string }[],
) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '16505550000', phone_number_id: phoneNumberId },
              statuses: statuses.map((s) => ({
                id: s.id,
                status: s.status,
                timestamp: String(Math.floor(s.timestamp / 1000)),
                recipient_id: '16505550123',
                ...(s.errors ? { errors: s.errors } : {}),
                ...(s.callback ? { biz_opaque_callback_data: s.callback } : {}),
              })),
            },
          },
        ],
      },
    ],
  };
}

/** 'hang': never answers; 'drip': answers 200 with its headers, then a byte of body every 100 ms, for ever. */
type FakeAnswer = { status: number; body?: unknown } | 'hang' | 'drip';

/** A stand-in provider with scripted answers, for what the sandbox cannot do (fixed IDs, hangs). */
export async function startFakeProvider(
  answer: (body: Record<string, unknown>, req: IncomingMessage) => FakeAnswer | Promise<FakeAnswer>,
): Promise<{
  url: string;
  requests: { body: Record<string, unknown>; authorization: string | undefined }[];
  close(): Promise<void>;
}> {
  const requests: { body: Record<string, unknown>; authorization: string | undefined }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      requests.push({ body, authorization: req.headers.authorization });
      void Promise.resolve(answer(body, req)).then((out) => {
        if (out === 'hang') return;
        if (out === 'drip') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{');
          const timer = setInterval(() => res.write(' '), 100);
          res.on('close', () => clearInterval(timer));
          return;
        }
        res.writeHead(out.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out.body ?? {}));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function inboundPayload(
  phoneNumberId: string,
  from: string,
  id: string,
  text: string,
  name = 'Ada',
  at = Date.now(),
) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '16505550000', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name }, wa_id: from.replace(/\D/g, '') }],
              messages: [
                {
                  from: from.replace(/\D/g, ''),
                  id,
                  timestamp: String(Math.floor(at / 1000)),
                  type: 'text',
                  text: { body: text },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

/**
 * Makes the database refuse writes to `table` (optionally only rows whose `column` is `value`),
 * with a trigger, on either database: how the tests make a step fail for an unexpected reason.
 * Returns the function that removes the trigger.
 */
export async function failWrites(
  t: TestApp,
  table: string,
  event: 'INSERT' | 'UPDATE',
  only?: { column: string; value: string },
): Promise<() => Promise<void>> {
  const name = `fail_${table}_${event.toLowerCase()}_${randomInt(1e9)}`;
  const when = only ? `WHEN (NEW.${only.column} = '${only.value.replaceAll("'", "''")}')` : '';
  if (t.dialect === 'sqlite') {
    await sql
      .raw(
        `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} ${when} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
      )
      .execute(t.ctx.db);
    return async () => {
      await sql.raw(`DROP TRIGGER ${name}`).execute(t.ctx.db);
    };
  }
  await sql
    .raw(
      `CREATE FUNCTION ${name}() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql`,
    )
    .execute(t.ctx.db);
  await sql
    .raw(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW ${when} EXECUTE FUNCTION ${name}()`)
    .execute(t.ctx.db);
  return async () => {
    await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(t.ctx.db);
    await sql.raw(`DROP FUNCTION ${name}()`).execute(t.ctx.db);
  };
}

/** Posts a webhook signed as the provider would, and waits until its work is done. */
export async function postWebhook(t: TestApp, payload: unknown) {
  const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
  const res = await call(t, { method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
  await t.ctx.messaging.webhooks.idle();
  return res;
}

/**
 * The provider webhook bodies kept out of the queue, oldest first: the job runner's dead letters of
 * the provider-webhook queue (`failed`) and the unrouted store's bodies (`unrouted`).
 */
export async function storedWebhooks(t: TestApp) {
  const dead = await t.ctx.db
    .selectFrom('job_dead_letters')
    .select(['id', 'attempts', 'last_error', 'payload'])
    .where('queue', '=', 'provider-webhook')
    .where('attempts', '>', 0)
    .execute();
  const unrouted = await t.ctx.db
    .selectFrom('webhook_unrouted')
    .select(['id', 'attempts', 'last_error', 'phone_number_ids', 'body', 'received_at'])
    .execute();
  const rows = [
    ...dead.map((r) => {
      const { raw, receivedAt } = JSON.parse(r.payload) as { raw: string; receivedAt: number };
      const row = { id: r.id, state: 'failed', attempts: Number(r.attempts), last_error: r.last_error };
      return { ...row, phone_number_ids: null as string | null, body: raw, receivedAt: Number(receivedAt) };
    }),
    ...unrouted.map((r) => {
      const row = {
        id: r.id,
        state: 'unrouted',
        attempts: Number(r.attempts),
        last_error: r.last_error as string | null,
      };
      return {
        ...row,
        phone_number_ids: r.phone_number_ids as string | null,
        body: r.body,
        receivedAt: Number(r.received_at),
      };
    }),
  ];
  // Oldest first; bodies received at the same time in the order they were kept (a stable sort).
  rows.sort((a, b) => a.receivedAt - b.receivedAt);
  return rows.map(({ receivedAt: _receivedAt, ...row }) => row);
}

/** Deletes the data of a test app whose app and context were closed by hand (a "restart"). */
export async function dropTestData(t: TestApp): Promise<void> {
  const schema = t.env.PARLEY_PG_SCHEMA;
  if (t.dialect === 'postgres' && PG_URL && schema) await dropPostgresSchema(PG_URL, schema);
  const dir = t.env.PARLEY_DATA_DIR;
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/** A user writing in through the sandbox helper: POST /api/sandbox/inbound on `t` with `auth`. */
export function sandboxInbound(t: TestApp, auth: Record<string, string>, from: string, text = 'hi') {
  return call(t, { method: 'POST', url: '/api/sandbox/inbound', headers: auth, payload: { from, text } });
}

/** The end users of an organization holding this phone (the given columns only). */
export function endUsersWithPhone<C extends 'id' | 'phone' | 'name' | 'origin'>(
  t: TestApp,
  orgId: string,
  phone: string,
  columns: readonly C[],
) {
  return t.ctx.db
    .selectFrom('end_users')
    .select(columns)
    .where('org_id', '=', orgId)
    .where('phone', '=', phone)
    .execute();
}
