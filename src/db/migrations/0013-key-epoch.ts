import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * The key epoch: one row whose number grows with every change that can alter what a key may do
 * (a key revoked, deleted or rewritten, an organization's plan changed or the organization
 * deleted). Servers cache keys in memory and trust an entry only while the epoch is the one it was
 * read under (src/auth/key-cache.ts). Triggers bump it, so it moves in the same transaction as the
 * change, whoever writes it: a server, the CLI, another node, or an operator at a SQL prompt.
 * Creating a key needs no bump (a key missing from a cache is read from the database), and neither
 * does recording when a key was last used (those columns are left out of the triggers).
 */
const KEY_COLUMNS = ['org_id', 'hash', 'scope', 'agent_id', 'campaign_id', 'permissions', 'revoked_at'];

export const keyEpoch: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('key_epoch')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .execute();
    await sql`INSERT INTO key_epoch (id, epoch) VALUES (1, 1)`.execute(db);
    const columns = sql.raw(KEY_COLUMNS.join(', '));
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      // SET search_path FROM CURRENT: the function finds this schema's key_epoch whoever writes.
      await sql`CREATE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
          UPDATE key_epoch SET epoch = epoch + 1 WHERE id = 1;
          RETURN NULL;
        END $$`.execute(db);
      // Once per statement: a statement revoking many keys bumps once.
      await sql`CREATE TRIGGER api_keys_key_epoch AFTER UPDATE OF ${columns} OR DELETE ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch()`.execute(db);
      await sql`CREATE TRIGGER organizations_key_epoch AFTER UPDATE OF plan OR DELETE ON organizations
        FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch()`.execute(db);
      return;
    }
    const bump = sql.raw('BEGIN UPDATE key_epoch SET epoch = epoch + 1 WHERE id = 1; END');
    await sql`CREATE TRIGGER api_keys_key_epoch_update AFTER UPDATE OF ${columns} ON api_keys ${bump}`.execute(db);
    await sql`CREATE TRIGGER api_keys_key_epoch_delete AFTER DELETE ON api_keys ${bump}`.execute(db);
    await sql`CREATE TRIGGER organizations_key_epoch_update AFTER UPDATE OF plan ON organizations ${bump}`.execute(db);
    await sql`CREATE TRIGGER organizations_key_epoch_delete AFTER DELETE ON organizations ${bump}`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`DROP TRIGGER IF EXISTS api_keys_key_epoch ON api_keys`.execute(db);
      await sql`DROP TRIGGER IF EXISTS organizations_key_epoch ON organizations`.execute(db);
      await sql`DROP FUNCTION IF EXISTS bump_key_epoch()`.execute(db);
    } else {
      for (const name of [
        'api_keys_key_epoch_update',
        'api_keys_key_epoch_delete',
        'organizations_key_epoch_update',
        'organizations_key_epoch_delete',
      ]) {
        await sql`DROP TRIGGER IF EXISTS ${sql.raw(name)}`.execute(db);
      }
    }
    await db.schema.dropTable('key_epoch').execute();
  },
};
