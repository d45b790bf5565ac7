import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * The rank of each status a provider reports, as `STATUS_RANK` (src/messaging/message.repository.ts)
 * has them: a message only moves to a higher one, and `failed` is final. Written out here, as a
 * migration is never edited once released.
 */
const RANKS: Readonly<Record<string, number>> = { sent: 2, delivered: 3, read: 4, failed: 5 };

/** The rank of `status` (an SQL expression); 0 for anything else, which moves nothing. */
const rankOf = (status: string) =>
  `(case ${status} ${Object.entries(RANKS)
    .map(([name, rank]) => `when '${name}' then ${rank}`)
    .join(' ')} else 0 end)`;

/** The message `m` moved to the status `status`, of rank `rank`, received at `received`, if that ranks higher. */
const moveTo = (m: string, v: { status: string; rank: string; received: string; code: string; error: string }) =>
  `status = case when ${m}.status_rank < ${v.rank} then ${v.status} else ${m}.status end,
    status_rank = case when ${m}.status_rank < ${v.rank} then ${v.rank} else ${m}.status_rank end,
    updated_at = case when ${m}.status_rank < ${v.rank} then ${v.received} else ${m}.updated_at end,
    error_code = case when ${m}.status_rank < ${v.rank} and ${v.status} = 'failed' then ${v.code} else ${m}.error_code end,
    error_message = case when ${m}.status_rank < ${v.rank} and ${v.status} = 'failed' then ${v.error} else ${m}.error_message end`;

/** A row `s` of `message_statuses` as an entry of the history. */
const pgEntry = (s: string) =>
  `jsonb_build_object('status', ${s}.status, 'occurred_at', ${s}.occurred_at, 'received_at', ${s}.received_at,
    'error_code', ${s}.error_code, 'error_message', ${s}.error_message)`;
const sqliteEntry = (s: string) =>
  `json_object('status', ${s}.status, 'occurred_at', ${s}.occurred_at, 'received_at', ${s}.received_at,
    'error_code', ${s}.error_code, 'error_message', ${s}.error_message)`;

/** The columns of a move (`moveTo`) read from the row `v` of a query. */
const fromRow = (v: string) => ({
  status: `${v}.status`,
  rank: `${v}.rank`,
  received: `${v}.received_at`,
  code: `${v}.error_code`,
  error: `${v}.error_message`,
});

/**
 * PostgreSQL: each message of the rows of `statuses` (a table of `message_statuses`' columns) moved
 * to the highest of them, if that ranks higher, and its history set to `history` (an expression of
 * `m`, the message, and `v.entries`, those rows as history entries).
 */
const pgRecord = (statuses: string, history: string) =>
  sql.raw(`UPDATE messages m SET ${moveTo('m', fromRow('v'))},
      status_history = ${history}
    FROM (
      SELECT DISTINCT ON (message_id) message_id, status, rank, received_at, error_code, error_message, entries
      FROM (
        SELECT s.*, ${rankOf('s.status')} AS rank,
          jsonb_agg(${pgEntry('s')}) OVER (PARTITION BY s.message_id) AS entries
        FROM ${statuses} s
      ) x
      ORDER BY message_id, rank DESC
    ) v
    WHERE m.id = v.message_id`);

/**
 * Each message keeps its status history on its own row (`status_history`, a JSON array of its rows
 * of `message_statuses`, in no particular order), so that `GET /api/messages/<id>` reads one row and
 * no second table.
 *
 * Recording a status is what moves its message: a trigger of `message_statuses`, in the same
 * statement, moves the message to the status if it ranks higher (`failed` bringing its error, the
 * receipt time becoming `updated_at`) and adds the status to the history. So the two cannot drift
 * apart, whoever records a status: this version, a node still running the version before during a
 * rolling upgrade (whose own update that follows then finds the message already moved), or an
 * operator at a SQL prompt. A status already recorded (`on conflict do nothing`) is not inserted and
 * changes nothing. The update is made against the message's row as it is when it locks it, so
 * statements recording statuses of one message at the same time each add theirs. On PostgreSQL the
 * trigger runs once per statement, over the rows it inserted: a batch of statuses is one update,
 * each message moved to the highest status recorded. Messages that already have statuses get their
 * history here, and a message whose highest status was recorded but never moved it (the version
 * before recorded a status and moved its message in two statements) is moved.
 */
export const statusHistory: Migration = {
  async up(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`ALTER TABLE messages ADD COLUMN status_history jsonb NOT NULL DEFAULT '[]'::jsonb`.execute(db);
      await sql`CREATE FUNCTION record_message_statuses() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
          ${pgRecord('added', 'm.status_history || v.entries')};
          RETURN NULL;
        END $$`.execute(db);
      await sql`CREATE TRIGGER message_statuses_record AFTER INSERT ON message_statuses
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION record_message_statuses()`.execute(db);
      // The history of every message with statuses, and the message moved to its highest status if
      // it was not (the version before recorded a status and moved its message in two statements).
      await sql`${pgRecord('message_statuses', 'v.entries')}`.execute(db);
      return;
    }
    await sql`ALTER TABLE messages ADD COLUMN status_history text NOT NULL DEFAULT '[]'`.execute(db);
    const rank = rankOf('NEW.status');
    await sql`CREATE TRIGGER message_statuses_record AFTER INSERT ON message_statuses BEGIN
        UPDATE messages SET ${sql.raw(
          moveTo('messages', {
            status: 'NEW.status',
            rank,
            received: 'NEW.received_at',
            code: 'NEW.error_code',
            error: 'NEW.error_message',
          }),
        )},
          status_history = json_insert(status_history, '$[#]', ${sql.raw(sqliteEntry('NEW'))})
        WHERE id = NEW.message_id;
      END`.execute(db);
    await sql`UPDATE messages SET ${sql.raw(moveTo('messages', fromRow('h')))},
        status_history = h.history
      FROM (
        SELECT message_id, status, rank, received_at, error_code, error_message, history FROM (
          SELECT s.*, ${sql.raw(rankOf('s.status'))} AS rank,
            row_number() OVER (PARTITION BY s.message_id ORDER BY ${sql.raw(rankOf('s.status'))} DESC) AS n,
            json_group_array(${sql.raw(sqliteEntry('s'))}) OVER (PARTITION BY s.message_id
              ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS history
          FROM message_statuses s
        ) WHERE n = 1
      ) AS h
      WHERE messages.id = h.message_id`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`DROP TRIGGER IF EXISTS message_statuses_record ON message_statuses`.execute(db);
      await sql`DROP FUNCTION IF EXISTS record_message_statuses()`.execute(db);
    } else {
      await sql`DROP TRIGGER IF EXISTS message_statuses_record`.execute(db);
    }
    await sql`ALTER TABLE messages DROP COLUMN status_history`.execute(db);
  },
};
