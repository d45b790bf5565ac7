import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAcceptance } from '../../src/channels/send-from-agent.js';
import { findConversationWithKeyEpoch } from '../../src/conversations/conversation.fast.js';
import { PerTurn } from '../../src/db/per-turn.js';
import { batchedReads, precompiled, slot } from '../../src/db/precompiled.js';
import { findEndUserByIdWithKeyEpoch } from '../../src/end-users/end-user.fast.js';
import { findMessageWithKeyEpoch } from '../../src/messaging/message.fast.js';
import { applyPendingStatuses } from '../../src/messaging/status.repository.js';
import { DIALECTS } from '../helpers/app.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, templateSend } from '../helpers/messaging.js';

describe('PerTurn', () => {
  /** A batcher that records what ran: each call alone, or several as one. */
  function recording(failMany = false, failOne: (n: number) => boolean = () => false) {
    const ran: string[] = [];
    const batcher = new PerTurn<number, string>(
      async (n) => {
        ran.push(`one ${n}`);
        if (failOne(n)) throw new Error(`no ${n}`);
        return `alone ${n}`;
      },
      async (ns) => {
        ran.push(`many ${ns.join(',')}`);
        if (failMany) throw new Error('the batch failed');
        return ns.map((n) => `batched ${n}`);
      },
    );
    return { ran, batcher };
  }

  it('runs a call alone in its turn as itself, and the calls of one turn as one batch', async () => {
    const { ran, batcher } = recording();
    expect(await batcher.add(1)).toBe('alone 1');
    expect(await Promise.all([batcher.add(2), batcher.add(3), batcher.add(4)])).toEqual([
      'batched 2',
      'batched 3',
      'batched 4',
    ]);
    // A call made once the batch is under way waits for the next turn's.
    const next = await batcher.add(5);
    expect(next).toBe('alone 5');
    expect(ran).toEqual(['one 1', 'many 2,3,4', 'one 5']);
  });

  it('runs each call of a failed batch again alone: only a call that fails alone is refused', async () => {
    const { ran, batcher } = recording(true, (n) => n === 2);
    const outcomes = await Promise.allSettled([batcher.add(1), batcher.add(2), batcher.add(3)]);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: 'alone 1' },
      { status: 'rejected', reason: new Error('no 2') },
      { status: 'fulfilled', value: 'alone 3' },
    ]);
    expect(ran).toEqual(['many 1,2,3', 'one 1', 'one 2', 'one 3']);
  });

  it('refuses every call of a batch that answers for a different number of calls', async () => {
    const batcher = new PerTurn<number, number>(
      async (n) => n,
      async () => [1],
    );
    const outcomes = await Promise.allSettled([batcher.add(1), batcher.add(2)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toMatch(/a batch of 2 answered 1/);
  });
});

describe.each(DIALECTS)('acceptances and pending statuses of one turn (%s)', (dialect) => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, { webhooks: false });
  });
  afterAll(async () => {
    await t.close();
  });

  /** Three sent templates, two of them in one conversation, put back as if not yet accepted. */
  async function threeUnaccepted() {
    const tenant = await makeSendingTenant(t.ctx);
    const same = templateSend();
    const sent = [];
    for (const payload of [same, same, templateSend()]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload,
      });
      expect(res.statusCode).toBe(200);
      sent.push(res.json() as { messageId: string; conversationId: string });
    }
    const rows = await t.ctx.db
      .selectFrom('messages')
      .select(['id', 'provider_message_id', 'conversation_id'])
      .where(
        'provider_message_id',
        'in',
        sent.map((s) => s.messageId),
      )
      .execute();
    const ids = sent.map((s) => rows.find((r) => r.provider_message_id === s.messageId)?.id ?? '');
    await t.ctx.db
      .updateTable('messages')
      .set({ provider_message_id: null, status: 'pending', status_rank: 0 })
      .where('id', 'in', ids)
      .execute();
    await t.ctx.db
      .updateTable('conversations')
      .set({ last_message_at: 5 })
      .where(
        'id',
        'in',
        sent.map((s) => s.conversationId),
      )
      .execute();
    return { ids, conversations: sent.map((s) => s.conversationId) };
  }

  /** The messages, in the order of `ids`. */
  async function messagesOf(ids: string[]) {
    const rows = await t.ctx.db
      .selectFrom('messages')
      .select(['id', 'provider_message_id', 'status', 'status_rank', 'updated_at'])
      .where('id', 'in', ids)
      .execute();
    return ids.map((id) => rows.find((r) => r.id === id));
  }

  /** An end user made through the API; its ID. */
  async function createEndUser(auth: Record<string, string>, name: string): Promise<string> {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/endusers',
      headers: auth,
      payload: { origin: 'manual', name },
    });
    expect(res.statusCode).toBe(201);
    return (res.json() as { _id: string })._id;
  }

  it('records the acceptances of one turn: each its own ID and status, each conversation at its latest time', async () => {
    const { ids, conversations } = await threeUnaccepted();
    const [a, b, c] = ids as [string, string, string];
    // The third was already delivered (a status webhook outran the answer): it stays delivered.
    await t.ctx.db.updateTable('messages').set({ status: 'delivered', status_rank: 3 }).where('id', '=', c).execute();
    await Promise.all([
      recordAcceptance(t.ctx.db, {
        id: a,
        providerMessageId: 'wamid.TURN_A',
        at: 1000,
        conversation: { id: conversations[0] ?? '', now: 30 },
      }),
      recordAcceptance(t.ctx.db, {
        id: b,
        providerMessageId: 'wamid.TURN_B',
        at: 1001,
        conversation: { id: conversations[1] ?? '', now: 20 },
      }),
      recordAcceptance(t.ctx.db, {
        id: c,
        providerMessageId: 'wamid.TURN_C',
        at: 1002,
        conversation: { id: conversations[2] ?? '', now: 40 },
      }),
    ]);
    expect(await messagesOf(ids)).toEqual([
      { id: a, provider_message_id: 'wamid.TURN_A', status: 'accepted', status_rank: 1, updated_at: 1000 },
      { id: b, provider_message_id: 'wamid.TURN_B', status: 'accepted', status_rank: 1, updated_at: 1001 },
      { id: c, provider_message_id: 'wamid.TURN_C', status: 'delivered', status_rank: 3, updated_at: 1002 },
    ]);
    const convs = await t.ctx.db
      .selectFrom('conversations')
      .select(['id', 'last_message_at'])
      .where('id', 'in', conversations)
      .execute();
    expect(conversations[0]).toBe(conversations[1]);
    expect(Object.fromEntries(convs.map((r) => [r.id, Number(r.last_message_at)]))).toEqual({
      [conversations[0] ?? '']: 30,
      [conversations[2] ?? '']: 40,
    });
  });

  it('fails only the acceptance that cannot be stored: the others of its turn are recorded', async () => {
    const { ids } = await threeUnaccepted();
    const [a, b, c] = ids as [string, string, string];
    // A provider ID already taken (unique): the batch fails, and each acceptance runs again alone.
    await t.ctx.db.updateTable('messages').set({ provider_message_id: 'wamid.TAKEN' }).where('id', '=', a).execute();
    const outcomes = await Promise.allSettled([
      recordAcceptance(t.ctx.db, { id: b, providerMessageId: 'wamid.TAKEN', at: 2000, conversation: null }),
      recordAcceptance(t.ctx.db, { id: c, providerMessageId: 'wamid.FINE', at: 2001, conversation: null }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(await messagesOf([b, c])).toEqual([
      { id: b, provider_message_id: null, status: 'pending', status_rank: 0, updated_at: expect.any(Number) },
      { id: c, provider_message_id: 'wamid.FINE', status: 'accepted', status_rank: 1, updated_at: 2001 },
    ]);
  });

  it('applies to each message of one turn its own pending statuses, and clears them', async () => {
    const { ids } = await threeUnaccepted();
    const [a, b, c] = ids as [string, string, string];
    const pending = (provider_message_id: string, status: string, occurred_at: number) => ({
      provider_message_id,
      status,
      occurred_at,
      received_at: occurred_at,
      error_code: null,
      error_message: null,
      phone_number_id: null,
    });
    await t.ctx.db
      .insertInto('pending_statuses')
      .values([
        pending('wamid.PEND_A', 'delivered', 3000),
        pending('wamid.PEND_B', 'read', 3002),
        pending('wamid.PEND_B', 'sent', 3001),
        pending('wamid.PEND_OTHER', 'sent', 3003),
      ])
      .execute();
    await Promise.all([
      recordAcceptance(t.ctx.db, { id: a, providerMessageId: 'wamid.PEND_A', at: 2999, conversation: null }),
      recordAcceptance(t.ctx.db, { id: b, providerMessageId: 'wamid.PEND_B', at: 2999, conversation: null }),
      recordAcceptance(t.ctx.db, { id: c, providerMessageId: 'wamid.PEND_C', at: 2999, conversation: null }),
    ]);
    const applied = await Promise.all([
      applyPendingStatuses(t.ctx.db, a, 'wamid.PEND_A', undefined),
      applyPendingStatuses(t.ctx.db, b, 'wamid.PEND_B', undefined),
      applyPendingStatuses(t.ctx.db, c, 'wamid.PEND_C', undefined),
    ]);
    expect(applied.map((events) => events.map((e) => `${e.status}@${e.occurredAt}`))).toEqual([
      ['delivered@3000'],
      ['sent@3001', 'read@3002'],
      [],
    ]);
    expect((await messagesOf(ids)).map((m) => m?.status)).toEqual(['delivered', 'read', 'accepted']);
    const left = await t.ctx.db
      .selectFrom('pending_statuses')
      .select('provider_message_id')
      .where('provider_message_id', 'like', 'wamid.PEND_%')
      .execute();
    expect(left).toEqual([{ provider_message_id: 'wamid.PEND_OTHER' }]);
  });

  it('answers each by-ID read of one turn with its own record, or none, and the key epoch', async () => {
    const one = await makeSendingTenant(t.ctx);
    const two = await makeSendingTenant(t.ctx);
    const ada = await createEndUser(one.orgKey.auth, 'Ada');
    const bob = await createEndUser(two.orgKey.auth, 'Bob');
    const { epoch } = await findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: one.org.id, id: ada });
    const reads = await Promise.all([
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: one.org.id, id: ada }),
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: one.org.id, id: bob }), // another organization's
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: two.org.id, id: bob }),
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: one.org.id, id: 'eu_nothere' }),
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: one.org.id, id: ada }),
    ]);
    expect(reads.map((r) => r.row?.name ?? null)).toEqual(['Ada', null, 'Bob', null, 'Ada']);
    expect(reads.map((r) => r.row?.org_id ?? null)).toEqual([one.org.id, null, two.org.id, null, one.org.id]);
    expect(reads.map((r) => r.epoch)).toEqual([epoch, epoch, epoch, epoch, epoch]);
  });

  it.runIf(dialect === 'sqlite')('on SQLite, runs the by-ID reads of one turn just after it', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const ada = await createEndUser(tenant.orgKey.auth, 'Ada');
    const sqlite = t.ctx.database.sqlite;
    if (!sqlite) throw new Error('no SQLite connection');
    const rename = sqlite.prepare('UPDATE end_users SET name = ? WHERE id = ?');
    // Asked for first, then a rename committed later in the same turn: the reads run after the
    // turn, so every one of them sees the new name (run when asked, they would see 'Ada').
    const reads = [
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: tenant.org.id, id: ada }),
      findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: tenant.org.id, id: ada }),
    ];
    const alone = findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: tenant.org.id, id: 'eu_nothere' });
    rename.run('Ada Lovelace', ada);
    expect((await Promise.all(reads)).map((r) => r.row?.name)).toEqual(['Ada Lovelace', 'Ada Lovelace']);
    expect((await alone).row).toBeUndefined();
    // A read alone in its turn waits for the turn's end too.
    const later = findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: tenant.org.id, id: ada });
    rename.run('Countess of Lovelace', ada);
    expect((await later).row?.name).toBe('Countess of Lovelace');
    // Through the API, many at once: each answer its own record, or its 404.
    const answers = await Promise.all(
      [ada, 'eu_nothere', ada, ada, 'eu_other'].map((id) =>
        t.app.inject({ method: 'GET', url: `/api/endusers/${id}`, headers: tenant.orgKey.auth }),
      ),
    );
    expect(answers.map((a) => a.statusCode)).toEqual([200, 404, 200, 200, 404]);
    expect(answers.filter((a) => a.statusCode === 200).map((a) => (a.json() as { name: string }).name)).toEqual([
      'Countess of Lovelace',
      'Countess of Lovelace',
      'Countess of Lovelace',
    ]);
  });

  it.runIf(dialect === 'sqlite')(
    'on SQLite, the reads of one turn share one read transaction, leave none open, and wait for a transaction open meanwhile',
    async () => {
      const sqlite = t.ctx.database.sqlite;
      if (!sqlite) throw new Error('no SQLite connection');
      const tenant = await makeSendingTenant(t.ctx);
      const ada = await createEndUser(tenant.orgKey.auth, 'Ada');
      const nameOf = precompiled((db) => db.selectFrom('end_users').select('name').where('id', '=', slot<string>(0)));
      const rename = precompiled((db) =>
        db
          .updateTable('end_users')
          .set({ name: slot<string>(0) })
          .where('id', '=', slot<string>(1)),
      );
      // Each read notes whether a transaction was open as its statement ran (it runs when called).
      const inTransaction: boolean[] = [];
      const read = batchedReads<{ id: string; rename?: string }, string | undefined>(
        async (db, { id, rename: to }) => {
          const result = to === undefined ? nameOf(db, [id]) : rename(db, [to, id]);
          inTransaction.push(sqlite.inTransaction);
          return ((await result).rows[0] as { name: string } | undefined)?.name;
        },
        async () => {
          throw new Error('SQLite takes its reads one by one');
        },
      );
      expect(
        await Promise.all([
          read(t.ctx.db, { id: ada }),
          read(t.ctx.db, { id: 'eu_nothere' }),
          read(t.ctx.db, { id: ada }),
        ]),
      ).toEqual(['Ada', undefined, 'Ada']);
      expect(inTransaction).toEqual([true, true, true]);
      expect(sqlite.inTransaction).toBe(false);
      // Alone in its turn, a read is a statement of its own.
      expect(await read(t.ctx.db, { id: ada })).toBe('Ada');
      expect(inTransaction.at(-1)).toBe(false);
      // A write called among them is not run in their transaction: it joins the group commit,
      // which runs after them.
      const before = inTransaction.length;
      const outcomes = await Promise.all([
        read(t.ctx.db, { id: ada }),
        read(t.ctx.db, { id: ada, rename: 'Mallory' }),
        read(t.ctx.db, { id: ada }),
      ]);
      expect(outcomes).toEqual(['Ada', undefined, 'Ada']);
      expect(inTransaction.slice(before)).toEqual([true, true, true]);
      expect(sqlite.inTransaction).toBe(false);
      expect(await t.ctx.db.selectFrom('end_users').select('name').where('id', '=', ada).execute()).toEqual([
        { name: 'Mallory' },
      ]);
      // A transaction of the application is open when the turn's reads come: they wait for it
      // (through Kysely) and see what it committed.
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const transaction = t.ctx.db.transaction().execute(async (trx) => {
        await trx.updateTable('end_users').set({ name: 'Ada Lovelace' }).where('id', '=', ada).execute();
        await held;
      });
      while (!sqlite.inTransaction) await new Promise((r) => setImmediate(r));
      const during = [
        read(t.ctx.db, { id: ada }),
        findEndUserByIdWithKeyEpoch(t.ctx.db, { orgId: tenant.org.id, id: ada }),
      ] as const;
      let settled = 0;
      for (const d of during) void d.finally(() => settled++);
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      // Nothing read inside it: the connection is the transaction's until it ends.
      expect(settled).toBe(0);
      release();
      await transaction;
      const [name, record] = await Promise.all(during);
      expect(name).toBe('Ada Lovelace');
      expect(record.row?.name).toBe('Ada Lovelace');
      expect(sqlite.inTransaction).toBe(false);
    },
  );

  it('answers each message and conversation read of one turn with its own, statuses included', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const stranger = await makeSendingTenant(t.ctx);
    const send = async (auth: Record<string, string>) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: auth,
        payload: templateSend(),
      });
      expect(res.statusCode).toBe(200);
      const { messageId, conversationId } = res.json() as { messageId: string; conversationId: string };
      const row = await t.ctx.db
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', messageId)
        .executeTakeFirstOrThrow();
      return { id: row.id, messageId, conversationId };
    };
    const mine = await send(tenant.agentKey.auth);
    const theirs = await send(stranger.agentKey.auth);
    const status = (status: string, occurred_at: number) => ({
      message_id: mine.id,
      status,
      occurred_at,
      received_at: occurred_at + 1,
      error_code: null,
      error_message: null,
    });
    await t.ctx.db
      .insertInto('message_statuses')
      .values([status('delivered', 6000), status('sent', 5000)])
      .execute();
    const org = tenant.org.id;
    const messages = await Promise.all([
      findMessageWithKeyEpoch(t.ctx.db, { orgId: org, id: mine.id }),
      findMessageWithKeyEpoch(t.ctx.db, { orgId: org, id: mine.messageId }),
      findMessageWithKeyEpoch(t.ctx.db, { orgId: org, id: theirs.messageId }), // another organization's
      findMessageWithKeyEpoch(t.ctx.db, { orgId: org, id: 'msg_nothere' }),
      findMessageWithKeyEpoch(t.ctx.db, { orgId: stranger.org.id, id: theirs.id }),
    ]);
    expect(messages.map((m) => m.found?.message.id ?? null)).toEqual([mine.id, mine.id, null, null, theirs.id]);
    // Stored straight into message_statuses, still in the message's history (in no particular
    // order: the answer orders it).
    const history = [...(messages[0]?.found?.statuses ?? [])].sort((a, b) => a.occurred_at - b.occurred_at);
    expect(history).toEqual([
      { status: 'sent', occurred_at: 5000, received_at: 5001, error_code: null, error_message: null },
      { status: 'delivered', occurred_at: 6000, received_at: 6001, error_code: null, error_message: null },
    ]);
    expect(messages[1]?.found).toEqual(messages[0]?.found);
    expect(messages[4]?.found?.statuses).toEqual([]);
    const epochs = new Set(messages.map((m) => m.epoch));
    expect(epochs.size).toBe(1);
    const conversations = await Promise.all([
      findConversationWithKeyEpoch(t.ctx.db, { orgId: org, id: mine.conversationId }),
      findConversationWithKeyEpoch(t.ctx.db, { orgId: org, id: theirs.conversationId }),
      findConversationWithKeyEpoch(t.ctx.db, { orgId: stranger.org.id, id: theirs.conversationId }),
    ]);
    expect(conversations.map((c) => c.row?.id ?? null)).toEqual([mine.conversationId, null, theirs.conversationId]);
    expect(conversations[0]?.row).toMatchObject({ org_id: org, agent_id: tenant.agent.id, status: 'open' });
    expect(conversations.map((c) => c.epoch)).toEqual([...epochs, ...epochs, ...epochs]);
  });

  it.runIf(dialect === 'postgres')('on PostgreSQL, the acceptances of one turn are one statement', async () => {
    const { ids } = await threeUnaccepted();
    const [a, b] = ids as [string, string, string];
    // Another transaction holds the first message's row: a statement that holds both acceptances waits
    // for it, so neither is visible until it lets go (two statements would record the second at once).
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: (pid: number) => void = () => {};
    const holderPid = new Promise<number>((resolve) => {
      locked = resolve;
    });
    const holder = t.ctx.db.transaction().execute(async (tx) => {
      await tx.selectFrom('messages').select('id').where('id', '=', a).forUpdate().execute();
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
      locked(Number(rows[0]?.pid));
      await held;
    });
    const pid = await holderPid;
    const both = Promise.all([
      recordAcceptance(t.ctx.db, { id: a, providerMessageId: 'wamid.LOCK_A', at: 4000, conversation: null }),
      recordAcceptance(t.ctx.db, { id: b, providerMessageId: 'wamid.LOCK_B', at: 4001, conversation: null }),
    ]);
    try {
      // Wait until an acceptance is blocked by that transaction: the statement holding both. (Only
      // statements that record a provider ID count: anything else of the app's that happens to wait
      // for that row is not what this test is about.)
      let waiting: string[] = [];
      while (waiting.length === 0) {
        waiting = (
          await sql<{
            query: string;
          }>`select query from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(t.ctx.db)
        ).rows
          .map((r) => r.query)
          .filter((q) => q.includes('provider_message_id'));
        if (waiting.length === 0) await new Promise((r) => setTimeout(r, 20));
      }
      expect(waiting).toEqual([expect.stringContaining('unnest')]);
      expect((await messagesOf([b]))[0]?.status).toBe('pending');
    } finally {
      release();
    }
    await holder;
    await both;
    expect((await messagesOf([a, b])).map((m) => [m?.provider_message_id, m?.status])).toEqual([
      ['wamid.LOCK_A', 'accepted'],
      ['wamid.LOCK_B', 'accepted'],
    ]);
  });
});
