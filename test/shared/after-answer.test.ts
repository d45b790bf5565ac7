import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { dropPostgresSchema } from '../../src/db/database.js';
import { AfterAnswer } from '../../src/shared/after-answer.js';
import { PG_URL } from '../helpers/app.js';
import {
  createQuietTestApp,
  makeSendingTenant,
  postWebhook,
  startFakeProvider,
  statusPayload,
  templateSend,
} from '../helpers/messaging.js';

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({ write: (chunk, _enc, done) => done(void lines.push(JSON.parse(String(chunk)))) }),
  );
  return { logger, lines };
}

/** A promise and the function that settles it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe('AfterAnswer', () => {
  it('runs work at once, and idle() waits for it, including work it starts meanwhile', async () => {
    const { logger } = capturingLogger();
    const later = new AfterAnswer(logger);
    const first = gate();
    const second = gate();
    const done: string[] = [];
    later.run('first', async () => {
      await first.opened;
      done.push('first');
      later.run('second', async () => {
        await second.opened;
        done.push('second');
      });
    });
    expect(later.size).toBe(1);
    let idle = false;
    const waiting = later.idle().then(() => {
      idle = true;
    });
    first.open();
    // The first is done and has started the second, which idle() must wait for too.
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toEqual(['first']);
    expect(later.size).toBe(1);
    expect(idle).toBe(false);
    second.open();
    await waiting;
    expect(done).toEqual(['first', 'second']);
    expect(later.size).toBe(0);
  });

  it('logs a failure with its fields and throws it to no one', async () => {
    const { logger, lines } = capturingLogger();
    const later = new AfterAnswer(logger);
    later.run('applying a thing', () => Promise.reject(new Error('boom')), { messageId: 'msg_1' });
    await later.idle();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'applying a thing failed after the answer',
        messageId: 'msg_1',
        err: expect.objectContaining({ message: 'boom' }),
      }),
    ]);
    expect(later.size).toBe(0);
  });
});

describe.skipIf(!PG_URL)('a send answers before the statuses that outran it are applied (postgres)', () => {
  it('answers while they wait on a lock, applies them after, and a closing server finishes them first', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.LATER1' }] },
    }));
    const t = await createQuietTestApp('postgres', { env: { PARLEY_PROVIDER_BASE_URL: provider.url } });
    const schema = t.env.PARLEY_PG_SCHEMA;
    if (!schema || !PG_URL) throw new Error('no schema');
    try {
      const tenant = await makeSendingTenant(t.ctx);
      // A status without our callback data, before the message exists: kept as pending.
      const early = statusPayload(tenant.number.phoneNumberId, [
        { id: 'wamid.LATER1', status: 'delivered', timestamp: Date.now() },
      ]);
      expect((await postWebhook(t, early)).statusCode).toBe(200);

      let closing: Promise<void> | undefined;
      await t.ctx.db.connection().execute(async (conn) => {
        // Nothing on a send's way to its answer touches pending statuses; applying them does.
        await sql`begin`.execute(conn);
        await sql`lock table pending_statuses in access exclusive mode`.execute(conn);
        const sent = await t.app.inject({
          method: 'POST',
          url: '/api/channels/send',
          headers: tenant.agentKey.auth,
          payload: templateSend(),
        });
        expect(sent.statusCode).toBe(200);
        expect(sent.json().messageId).toBe('wamid.LATER1');
        expect(t.ctx.afterAnswer.size).toBe(1);
        const meanwhile = await sql<{
          status: string;
        }>`select status from messages where provider_message_id = ${'wamid.LATER1'}`.execute(conn);
        expect(meanwhile.rows).toEqual([{ status: 'accepted' }]);
        const pending = await sql<{ status: string }>`select status from pending_statuses`.execute(conn);
        expect(pending.rows).toEqual([{ status: 'delivered' }]);
        // The server stops while that work still waits: it must finish it before its pool closes.
        await t.app.close();
        closing = t.ctx.close();
        await sql`commit`.execute(conn);
      });
      await closing;

      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const message = await client.query(
          `select status from "${schema}".messages where provider_message_id = 'wamid.LATER1'`,
        );
        expect(message.rows).toEqual([{ status: 'delivered' }]);
        const history = await client.query(
          `select s.status from "${schema}".message_statuses s join "${schema}".messages m on m.id = s.message_id
           where m.provider_message_id = 'wamid.LATER1'`,
        );
        expect(history.rows).toEqual([{ status: 'delivered' }]);
        const left = await client.query(`select count(*)::int as n from "${schema}".pending_statuses`);
        expect(left.rows).toEqual([{ n: 0 }]);
      } finally {
        await client.end();
      }
    } finally {
      await provider.close();
      await dropPostgresSchema(PG_URL, schema);
      if (t.env.PARLEY_DATA_DIR) rmSync(t.env.PARLEY_DATA_DIR, { recursive: true, force: true });
    }
  });
});
