import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_STATE_FILE } from '../../src/messaging/messaging.js';
import { MAGIC_NUMBERS } from '../../src/sandbox/index.js';
import { fileSentLog, readSentLogFile, type SentEntry } from '../../src/sandbox/sandbox-sent-log.js';
import { DIALECTS } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeKey } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  createQuietTestApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
  templateSend,
  textSend,
} from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';

/**
 * GET /api/sandbox/messages: the sandbox's log of what it was sent, through real HTTP. On both
 * databases: the log itself is the sandbox's SQLite file either way, but whose numbers a key sees
 * is read from Parley's database.
 */
describe.each(DIALECTS)('the sandbox log of what it was sent (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Awaited<ReturnType<typeof makeSendingTenant>>;
  let stranger: Awaited<ReturnType<typeof makeSendingTenant>>;

  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
    stranger = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = async (auth: Record<string, string>, payload: unknown) =>
    call(t, { method: 'POST', url: '/api/channels/send', headers: auth, payload });

  it('holds the exact wire body of an accepted send, under the message ID the send answered', async () => {
    const to = randomPhone();
    const before = Date.now();
    const res = await send(tenant.agentKey.auth, {
      ...templateSend(undefined, to),
      template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi Ada'], body: ['Ada', 'A-1'] } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { messageId } = res.json<{ messageId: string }>();

    const [entry, ...rest] = await sandboxLog(t, tenant.agentKey.auth, { to });
    expect(rest).toEqual([]);
    expect(entry).toEqual({
      messageId,
      from: tenant.number.phone,
      to,
      type: 'template',
      payload: {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to,
        biz_opaque_callback_data: expect.stringMatching(/^msg_/),
        type: 'template',
        template: {
          name: 'order_update',
          language: { code: 'en_US' },
          components: [
            { type: 'header', parameters: [{ type: 'text', text: 'Hi Ada' }] },
            {
              type: 'body',
              parameters: [
                { type: 'text', text: 'Ada' },
                { type: 'text', text: 'A-1' },
              ],
            },
          ],
        },
      },
      receivedAt: expect.any(Number),
      error: null,
    });
    expect(entry?.receivedAt).toBeGreaterThanOrEqual(before);
    expect(entry?.receivedAt).toBeLessThanOrEqual(Date.now());
  });

  it('holds refused requests too, with the provider error the sandbox answered and no message ID', async () => {
    // The sandbox's recipient who is not on the app: the provider refuses with 131026.
    const to = MAGIC_NUMBERS.notOnApp;
    const res = await send(tenant.agentKey.auth, templateSend(undefined, to));
    expect(res.statusCode, res.body).toBe(400);
    const [entry] = await sandboxLog(t, tenant.agentKey.auth, { to, limit: 1 });
    expect(entry).toEqual(
      expect.objectContaining({
        messageId: null,
        to,
        type: 'template',
        payload: expect.objectContaining({
          type: 'template',
          template: { name: 'hello_world', language: { code: 'en_US' } },
        }),
        error: { code: 131026, message: 'Message undeliverable' },
      }),
    );
  });

  it('is newest first, filtered by recipient, and limited', async () => {
    const user = randomPhone();
    expect((await sandboxInbound(t, tenant.agentKey.auth, user, 'hello')).statusCode).toBe(200);
    for (const text of ['one', 'two', 'three']) {
      expect((await send(tenant.agentKey.auth, textSend(undefined, user, text))).statusCode).toBe(200);
    }
    expect((await send(tenant.agentKey.auth, templateSend(undefined, randomPhone()))).statusCode).toBe(200);

    const bodies = (await sandboxLog(t, tenant.agentKey.auth, { to: user })).map(
      (e) => (e.payload.text as { body: string }).body,
    );
    expect(bodies).toEqual(['three', 'two', 'one']);
    const two = await sandboxLog(t, tenant.agentKey.auth, { to: user, limit: 2 });
    expect(two.map((e) => (e.payload.text as { body: string }).body)).toEqual(['three', 'two']);
    // Unfiltered: the template to someone else is the newest of the number's.
    const [newest] = await sandboxLog(t, tenant.agentKey.auth, { limit: 1 });
    expect(newest?.type).toBe('template');
    // `to` in another spelling of the same number.
    const spaced = `${user.slice(0, 2)} ${user.slice(2, 5)} ${user.slice(5)}`;
    expect(await sandboxLog(t, tenant.agentKey.auth, { to: spaced, limit: 1 })).toEqual([two[0]]);
  });

  it("shows only the key's organization's numbers, and an agent key only its own agent's", async () => {
    const to = randomPhone();
    expect((await send(stranger.agentKey.auth, templateSend(undefined, to))).statusCode).toBe(200);
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toEqual([]);
    expect(await sandboxLog(t, stranger.orgKey.auth, { to })).toEqual([
      expect.objectContaining({ to, from: stranger.number.phone }),
    ]);
    // The other agent of the same organization has no number: nothing, and no error.
    expect(await sandboxLog(t, stranger.otherKey.auth, { to })).toEqual([]);
    const otherAgent = await call(t, {
      method: 'GET',
      url: `/api/sandbox/messages?agent=${stranger.agent.id}`,
      headers: stranger.otherKey.auth,
    });
    expect(otherAgent.statusCode).toBe(403);
    expect(otherAgent.json()).toEqual({ success: false, error: expect.stringMatching(/another agent/) });
    const foreignAgent = await call(t, {
      method: 'GET',
      url: `/api/sandbox/messages?agent=${stranger.agent.id}`,
      headers: tenant.orgKey.auth,
    });
    expect(foreignAgent.statusCode).toBe(404);
    expect(foreignAgent.json()).toEqual({ success: false, error: expect.stringContaining(stranger.agent.id) });
  });

  it('refuses a bad query, a missing key and a key without Channels in the channel envelope', async () => {
    const bad = async (query: string, pattern: RegExp) => {
      const res = await call(t, { method: 'GET', url: `/api/sandbox/messages?${query}`, headers: tenant.orgKey.auth });
      expect(res.statusCode, query).toBe(400);
      expect(res.json(), query).toEqual({ success: false, error: expect.stringMatching(pattern) });
    };
    await bad('to=12', /'to' must be a phone number in international format/);
    await bad('limit=0', /limit/);
    await bad('limit=201', /limit/);
    await bad('since=1', /since/);
    expect((await call(t, { method: 'GET', url: '/api/sandbox/messages' })).statusCode).toBe(401);
    const endUsersOnly = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    const res = await call(t, { method: 'GET', url: '/api/sandbox/messages', headers: endUsersOnly.auth });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ success: false, error: expect.any(String) });
  });

  it.runIf(dialect === 'sqlite')(
    '`parley sandbox sent` reads the same log from another process, while the server writes it',
    async () => {
      const to = randomPhone();
      const sent = await send(tenant.agentKey.auth, templateSend(undefined, to));
      expect(sent.statusCode).toBe(200);
      expect((await send(tenant.agentKey.auth, templateSend(undefined, MAGIC_NUMBERS.notOnApp))).statusCode).toBe(400);
      const [json, table] = await Promise.all([
        runCli(['sandbox', 'sent', '--agent', tenant.agent.id, '--to', to, '--json'], t.env),
        runCli(['sandbox', 'sent', '--agent', tenant.agent.id], t.env),
      ]);
      expect(json.code, json.stderr).toBe(0);
      expect(json.json()).toEqual(await sandboxLog(t, tenant.agentKey.auth, { to }));
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toContain(`template hello_world (en_US)`);
      expect(table.stdout).toContain(sent.json<{ messageId: string }>().messageId);
      expect(table.stdout).toMatch(/refused \(131026\)\s+template hello_world \(en_US\): Message undeliverable/);
    },
  );
});

describe('the sandbox log is only in sandbox mode (sqlite: no database is read)', () => {
  it('answers 404 when a real provider is configured', async () => {
    const t = await createQuietTestApp('sqlite', { env: { PARLEY_PROVIDER_BASE_URL: 'http://127.0.0.1:9' } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const res = await t.app.inject({ method: 'GET', url: '/api/sandbox/messages', headers: tenant.orgKey.auth });
      expect(res.statusCode).toBe(404);
    } finally {
      await t.close();
    }
  });
});

describe('the sandbox log file (its own SQLite file whatever the database)', () => {
  const entry = (phoneNumberId: string, n: number): SentEntry => ({
    messageId: `wamid.${n}`,
    phoneNumberId,
    to: '+14155550100',
    type: 'text',
    payload: JSON.stringify({ n }),
    receivedAt: 1_000 + n,
    error: null,
  });

  it("keeps each number's newest requests up to its bound, written once per turn and readable from another connection", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-sent-log-'));
    const file = join(dir, SANDBOX_STATE_FILE);
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    try {
      const log = fileSentLog(db, 3);
      for (let n = 1; n <= 5; n++) log.record(entry('111', n));
      log.record(entry('222', 6));
      // Not yet written: another connection sees nothing until the turn ends.
      expect(readSentLogFile(file, { phoneNumberIds: ['111'], limit: 10 })).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      const other = readSentLogFile(file, { phoneNumberIds: ['111', '222'], limit: 10 });
      expect(other.map((e) => e.messageId)).toEqual(['wamid.6', 'wamid.5', 'wamid.4', 'wamid.3']);
      // The writer's own reads never miss what it recorded in the same turn.
      log.record(entry('111', 7));
      expect(log.list({ phoneNumberIds: ['111'], limit: 10 }).map((e) => e.messageId)).toEqual([
        'wamid.7',
        'wamid.5',
        'wamid.4',
      ]);
      expect(log.list({ phoneNumberIds: [], limit: 10 })).toEqual([]);
      expect(readSentLogFile(join(dir, 'absent.db'), { phoneNumberIds: ['111'], limit: 10 })).toEqual([]);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the sandbox log file on a full disk', () => {
  it('keeps what it could not write and writes it once there is room, without throwing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-sent-full-'));
    const db = new SQLite(join(dir, SANDBOX_STATE_FILE));
    try {
      const errors: unknown[] = [];
      const log = fileSentLog(db, 1000, (err) => errors.push(err));
      // A file that may not grow: SQLite answers SQLITE_FULL, as on a full disk.
      const pages = Number(db.pragma('page_count', { simple: true }));
      db.pragma(`max_page_count = ${pages}`);
      const big = (n: number): SentEntry => ({
        messageId: `wamid.full.${n}`,
        phoneNumberId: '333',
        to: '+14155550100',
        type: 'text',
        payload: 'x'.repeat(64 * 1024),
        receivedAt: n,
        error: null,
      });
      for (let n = 1; n <= 3; n++) log.record(big(n));
      await new Promise((resolve) => setImmediate(resolve));
      expect(errors.length).toBeGreaterThan(0);
      expect((errors[0] as { code?: string }).code).toBe('SQLITE_FULL');
      expect(log.list({ phoneNumberIds: ['333'], limit: 10 })).toEqual([]);
      db.pragma('max_page_count = 1073741823');
      expect(log.list({ phoneNumberIds: ['333'], limit: 10 }).map((e) => e.messageId)).toEqual([
        'wamid.full.3',
        'wamid.full.2',
        'wamid.full.1',
      ]);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
