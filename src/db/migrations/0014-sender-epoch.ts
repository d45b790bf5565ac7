import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * The key epoch also moves when what a send goes out from changes: an agent's number (assigned,
 * moved to another organization, the agent deleted) or a number's provider identity or access
 * token. Servers then keep each agent's sending number in memory beside the keys
 * (src/auth/key-cache.ts) and trust it only under the epoch it was read under, so a reassigned
 * number or a new token is used by the very next send on every node.
 */
const TRIGGERS = [
  { table: 'agents', columns: ['org_id', 'number_id'] },
  { table: 'messaging_numbers', columns: ['id', 'org_id', 'phone_number_id', 'access_token_enc'] },
] as const;

export const senderEpoch: Migration = {
  async up(db: Kysely<unknown>) {
    const pg = db.getExecutor().adapter instanceof PostgresAdapter;
    for (const { table, columns } of TRIGGERS) {
      const name = sql.raw(table);
      const cols = sql.raw(columns.join(', '));
      if (pg) {
        // bump_key_epoch() is migration 0013's; once per statement.
        await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch`)} AFTER UPDATE OF ${cols} OR DELETE ON ${name}
          FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch()`.execute(db);
        continue;
      }
      const bump = sql.raw('BEGIN UPDATE key_epoch SET epoch = epoch + 1 WHERE id = 1; END');
      await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch_update`)} AFTER UPDATE OF ${cols} ON ${name} ${bump}`.execute(
        db,
      );
      await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch_delete`)} AFTER DELETE ON ${name} ${bump}`.execute(db);
    }
  },
  async down(db: Kysely<unknown>) {
    const pg = db.getExecutor().adapter instanceof PostgresAdapter;
    for (const { table } of TRIGGERS) {
      if (pg) {
        await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_key_epoch`)} ON ${sql.raw(table)}`.execute(db);
        continue;
      }
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_key_epoch_update`)}`.execute(db);
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_key_epoch_delete`)}`.execute(db);
    }
  },
};
