/**
 * The hot statements of conversations: the send path's read of its recipient (and, on
 * PostgreSQL, that read storing the message), the open conversation of a pair, the reads of
 * `GET /api/conversations/<id>`, and a message's touch. Each is declared with `precompiled()`
 * (src/db/precompiled.ts): built and compiled once per database; on SQLite a prepared statement
 * run directly, whose writes join the group commit of that event-loop turn; on PostgreSQL a named
 * prepared statement (outside transactions). The PostgreSQL-only SQL of the batched sends
 * (`unnest`) is written here too.
 */
import { type Kysely, type QueryCreator, sql } from 'kysely';
import { byIdWithKeyEpoch } from '../db/by-id-with-key-epoch.js';
import { batchedOnPostgres, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { MESSAGE_COLUMN_TYPES, MESSAGE_COLUMNS } from '../messaging/message.model.js';
import type { MessageTable } from '../messaging/messaging.tables.js';
import type { ConversationTable } from './conversation.tables.js';

/**
 * `status = 'open'` written into the SQL of the prepared statements, never bound: the open
 * conversation of a pair is found through a partial index (`where status = 'open'`), and SQLite
 * can use it for a bound value only by planning the statement again each time it is run, which
 * made the send path's recipient read about seven times slower than the read itself.
 */
const OPEN = sql.lit<'open'>('open');

const openOfPair = precompiled((db) =>
  db
    .selectFrom('conversations')
    .selectAll()
    .where('org_id', '=', slot<string>(0))
    .where('agent_id', '=', slot<string>(1))
    .where('end_user_id', '=', slot<string>(2))
    .where('status', '=', OPEN),
);

/** The open conversation of an agent with an end user, if any. */
export async function findOpenConversation(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  endUserId: string,
): Promise<ConversationTable | undefined> {
  return (await openOfPair(db, [orgId, agentId, endUserId])).rows[0];
}

const CONVERSATION_COLUMNS = [
  'id',
  'org_id',
  'agent_id',
  'end_user_id',
  'trigger_id',
  'campaign_id',
  'status',
  'context',
  'started_at',
  'last_message_at',
  'closed_at',
  'updated_at',
] as const satisfies readonly (keyof ConversationTable)[];

/**
 * The key epoch, the end user with a phone (with their consent, which a marketing template's send
 * must respect) and their open conversation with an agent, in one statement: always one row, the
 * epoch's. Who handles the conversation (its handler, assignee and handoff) is not read here: a
 * send needs none of it, and the send path stays as lean as it was.
 */
const recipientSelect = (db: QueryCreator<DB>) =>
  db
    .selectFrom('key_epoch')
    .leftJoin('end_users as u', (join) => join.on('u.org_id', '=', slot<string>(0)).on('u.phone', '=', slot<string>(2)))
    .leftJoin('conversations as c', (join) =>
      join
        .onRef('c.org_id', '=', 'u.org_id')
        .onRef('c.end_user_id', '=', 'u.id')
        .on('c.agent_id', '=', slot<string>(1))
        .on('c.status', '=', OPEN),
    )
    .select([
      'key_epoch.epoch as key_epoch',
      'u.id as u_id',
      'u.name as u_name',
      'u.email as u_email',
      'u.consent as u_consent',
    ])
    .select(CONVERSATION_COLUMNS.map((c) => `c.${c}` as const))
    .where('key_epoch.id', '=', 1);

/** Exported for the plan tests (test/db/pg-plans.test.ts), as is `recipientStoringMessage`. */
export const recipientQuery = precompiled(recipientSelect);

export interface KnownRecipient {
  readonly endUser: { id: string; name: string | null; email: string | null };
  /** Their stored consent (JSON text). */
  readonly consent: string;
  /** Their open conversation with the agent, if any. */
  readonly open: ConversationTable | undefined;
}

/**
 * The send path's read of its recipient: the organization's end user with this phone and their
 * open conversation with the agent (`known` undefined when there is no such end user), and the key
 * epoch, read in the same statement (a send whose cached key awaits it confirms it from here).
 */
export async function findRecipient(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  phone: string,
): Promise<{ known: KnownRecipient | undefined; epoch: number }> {
  const row = (await recipientQuery(db, [orgId, agentId, phone])).rows[0];
  if (!row) throw new Error('the key epoch row is missing (migration 0013-key-epoch)');
  return recipientOf(row);
}

type RecipientRow = Awaited<ReturnType<ReturnType<typeof recipientSelect>['execute']>>[number];

function recipientOf(row: RecipientRow): { known: KnownRecipient | undefined; epoch: number } {
  const { key_epoch, u_id, u_name, u_email, u_consent, ...conversation } = row;
  const epoch = Number(key_epoch);
  if (u_id === null) return { known: undefined, epoch };
  return {
    known: {
      endUser: { id: u_id, name: u_name, email: u_email },
      consent: u_consent ?? '{}',
      open: conversation.id === null ? undefined : (conversation as ConversationTable),
    },
    epoch,
  };
}

/** Columns of a message stored with its recipient read; its conversation is the one the read found. */
const STORED_COLUMNS = MESSAGE_COLUMNS.filter((c) => c !== 'conversation_id');

/**
 * Whether the recipient's stored consent lets the message be stored with the read: always, unless
 * the send is one consent decides (`guard`: a marketing template) and the recipient opted out of
 * msgapp (the send then refuses it, as src/policies/ does for the same JSON).
 */
const consentAllows = (guard: unknown, consent: string) =>
  sql<boolean>`case when ${guard} then coalesce(${sql.ref(consent)}::jsonb #>> '{msgapp,status}', '') <> 'denied' else true end`;

/**
 * PostgreSQL: the recipient read of `findRecipient`, which also stores the message in the same
 * statement when the recipient has an open conversation with the agent that is still live
 * (`last_message_at` at or after `liveSince`), the key epoch is still `epoch` and, for a send
 * consent decides, the recipient did not opt out: otherwise it stores nothing. The values are cast to their columns' types: in a SELECT list, PostgreSQL would
 * otherwise take an untyped placeholder for text.
 */
export const recipientStoringMessage = precompiled((db) =>
  db
    .with('r', recipientSelect)
    .with('stored', (w) =>
      w
        .insertInto('messages')
        .columns([...STORED_COLUMNS, 'conversation_id'])
        .expression((eb) =>
          eb
            .selectFrom('r')
            .select([
              ...STORED_COLUMNS.map((c, i) => sql`cast(${slot(3 + i)} as ${sql.raw(MESSAGE_COLUMN_TYPES[c])})`.as(c)),
              'r.id as conversation_id',
            ])
            .where('r.key_epoch', '=', slot<number>(3 + STORED_COLUMNS.length))
            .where('r.id', 'is not', null)
            .where('r.last_message_at', '>=', slot<number>(4 + STORED_COLUMNS.length))
            .where(consentAllows(sql`cast(${slot<boolean>(5 + STORED_COLUMNS.length)} as boolean)`, 'r.u_consent')),
        )
        .returning('id'),
    )
    .selectFrom('r')
    .selectAll('r')
    .select((eb) => eb.selectFrom('stored').select(eb.fn.countAll<string>().as('n')).as('stored')),
);

/**
 * PostgreSQL: `recipientStoringMessage` for the sends of one turn of the event loop, in one
 * statement: a row per send, in their order (`i`), each with its recipient and whether its message
 * was stored, by the same tests as the statement of one (its own key epoch, its recipient's
 * conversation with its agent open and live). The arrays go in through sub-selects, so that the
 * prepared statement keeps its generic plan (see `byIdWithKeyEpoch`). Exported for the tests.
 */
export const recipientsStoringMessages = precompiled<RecipientRow & { stored: boolean }>((db) => {
  // Each array's column in `v` and its type: the send's own values, then its message's columns.
  const columns: [string, string][] = [
    ['org_id', 'text'],
    ['agent_id', 'text'],
    ['phone', 'text'],
    ['epoch', 'bigint'],
    ['live_since', 'bigint'],
    ['guard', 'boolean'],
    ...STORED_COLUMNS.map((c): [string, string] => [`m_${c}`, MESSAGE_COLUMN_TYPES[c]]),
  ];
  const arrays = columns.map(([, type], i) => sql`(select ${slot(i)}::${sql.raw(type)}[])`);
  const names = [...columns.map(([name]) => name), 'i'].join(', ');
  return {
    compile: () =>
      sql`with v as (
        select * from unnest(${sql.join(arrays)}) with ordinality as v(${sql.raw(names)})
      ), r as (
        select v.*, k.epoch as key_epoch, u.id as u_id, u.name as u_name, u.email as u_email,
          u.consent as u_consent,
          ${sql.raw(CONVERSATION_COLUMNS.map((c) => `c.${c} as c_${c}`).join(', '))}
        from v
        cross join key_epoch k
        left join end_users u on u.org_id = v.org_id and u.phone = v.phone
        left join conversations c
          on c.org_id = u.org_id and c.end_user_id = u.id and c.agent_id = v.agent_id and c.status = ${OPEN}
        where k.id = 1
      ), stored as (
        insert into messages (${sql.raw([...STORED_COLUMNS, 'conversation_id'].join(', '))})
        select ${sql.raw([...STORED_COLUMNS.map((c) => `r.m_${c}`), 'r.c_id'].join(', '))} from r
        where r.key_epoch = r.epoch and r.c_id is not null and r.c_last_message_at >= r.live_since
          and ${consentAllows(sql.ref('r.guard'), 'r.u_consent')}
        returning id
      )
      select r.key_epoch, r.u_id, r.u_name, r.u_email, r.u_consent,
        ${sql.raw(CONVERSATION_COLUMNS.map((c) => `r.c_${c} as ${c}`).join(', '))},
        exists (select 1 from stored where stored.id = r.m_id) as stored
      from r
      order by r.i`.compile(db),
  };
});

interface RecipientStoringInput {
  readonly orgId: string;
  readonly agentId: string;
  readonly phone: string;
  readonly epoch: number;
  readonly liveSince: number;
  /** The recipient's consent decides this send (a marketing template): not stored if they opted out. */
  readonly consentGuard: boolean;
  readonly message: MessageTable;
}

type RecipientStored = { known: KnownRecipient | undefined; epoch: number; stored: boolean };

/**
 * `findRecipient` on PostgreSQL, storing `message` (its `conversation_id` aside) with the
 * recipient's live conversation when there is one and the key epoch is still `epoch`; `stored`
 * says whether it did. If not, the caller stores the message itself, as after `findRecipient`.
 * The calls of one turn of the event loop share one statement and one commit
 * (`recipientsStoringMessages`); if that statement fails, each runs again alone.
 */
export const findRecipientStoringMessage = batchedOnPostgres<RecipientStoringInput, RecipientStored>(
  async (db, { orgId, agentId, phone, epoch, liveSince, consentGuard, message }) => {
    const values = [orgId, agentId, phone, ...STORED_COLUMNS.map((c) => message[c]), epoch, liveSince, consentGuard];
    const row = (await recipientStoringMessage(db, values)).rows[0];
    if (!row) throw new Error('the key epoch row is missing (migration 0013-key-epoch)');
    const { stored, ...recipient } = row;
    return { ...recipientOf(recipient), stored: Number(stored) > 0 };
  },
  async (db, inputs) => {
    const { rows } = await recipientsStoringMessages(db, [
      inputs.map((x) => x.orgId),
      inputs.map((x) => x.agentId),
      inputs.map((x) => x.phone),
      inputs.map((x) => x.epoch),
      inputs.map((x) => x.liveSince),
      inputs.map((x) => x.consentGuard),
      ...STORED_COLUMNS.map((c) => inputs.map((x) => x.message[c])),
    ]);
    return rows.map((row) => {
      const { stored, ...recipient } = row;
      return { ...recipientOf(recipient), stored: stored === true };
    });
  },
);

const byId = precompiled((db) =>
  db.selectFrom('conversations').selectAll().where('org_id', '=', slot<string>(0)).where('id', '=', slot<string>(1)),
);

export async function findConversation(
  db: Kysely<DB>,
  orgId: string,
  id: string,
): Promise<ConversationTable | undefined> {
  return (await byId(db, [orgId, id])).rows[0];
}

/** The key epoch and the conversation (if any) in one statement: always one row, the epoch's. */
const byIdWithKeyEpochQuery = precompiled((db) =>
  db
    .selectFrom('key_epoch')
    .leftJoin('conversations', (join) =>
      join.on('conversations.org_id', '=', slot<string>(0)).on('conversations.id', '=', slot<string>(1)),
    )
    .selectAll('conversations')
    .select('key_epoch.epoch as key_epoch')
    .where('key_epoch.id', '=', 1),
);

/**
 * For a GET whose cached key awaits it (see confirmKeyEpoch): the conversation and the key epoch
 * (`byIdWithKeyEpoch`: the reads of one turn of the event loop are taken together just after it).
 */
export const findConversationWithKeyEpoch = byIdWithKeyEpoch<ConversationTable>(
  'conversations',
  async (db, { orgId, id }) => (await byIdWithKeyEpochQuery(db, [orgId, id])).rows[0],
);

const touchQuery = precompiled((db) =>
  db
    .updateTable('conversations')
    .set({
      last_message_at: sql<number>`case when last_message_at < ${slot<number>(0)} then ${slot<number>(0)} else last_message_at end`,
      updated_at: slot<number>(1),
    })
    .where('id', '=', slot<string>(2)),
);

/** A message was added: the conversation's last message time moves forward, never back. */
export async function touchConversation(db: Kysely<DB>, id: string, at: number, now: number): Promise<void> {
  await touchQuery(db, [at, now, id]);
}
