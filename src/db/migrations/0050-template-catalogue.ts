import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * The policies that protect a number: each number's template catalogue as the provider has it
 * (`number_templates`), what Parley knows of the number's account and health (`number_accounts`:
 * the business account its templates live in, when its catalogue was last synced, its quality
 * rating and messaging limit), and an organization's opt-out keywords (`org_consent_rules`).
 *
 * A send checks the catalogue from memory: every change to a number's templates, or to whether
 * its catalogue is synced, bumps the key epoch (migration 0013) so that every node drops what it
 * kept, as for an agent's sending number (migration 0014).
 */
const EPOCH_TABLES = [
  {
    table: 'number_templates',
    columns: ['status', 'category', 'header_format', 'header_parameters', 'body_parameters'],
  },
  { table: 'number_accounts', columns: ['catalogue_synced', 'waba_id'] },
] as const;

export const templateCatalogue: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('number_templates')
      .addColumn('number_id', 'text', (c) => c.notNull().references('messaging_numbers.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('language', 'text', (c) => c.notNull())
      .addColumn('category', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('header_format', 'text')
      .addColumn('header_parameters', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('body_parameters', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('buttons', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('provider_template_id', 'text')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('number_templates_pk', ['number_id', 'name', 'language'])
      .execute();
    await db.schema
      .createTable('number_accounts')
      .addColumn('number_id', 'text', (c) => c.primaryKey().references('messaging_numbers.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('waba_id', 'text')
      .addColumn('catalogue_synced', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('templates_synced_at', 'bigint')
      .addColumn('sync_error', 'text')
      .addColumn('quality', 'text')
      .addColumn('messaging_limit', 'text')
      .addColumn('health_updated_at', 'bigint')
      .execute();
    await db.schema.createIndex('number_accounts_waba_idx').on('number_accounts').columns(['waba_id']).execute();
    await db.schema
      .createTable('org_consent_rules')
      .addColumn('org_id', 'text', (c) => c.primaryKey().references('organizations.id').onDelete('cascade'))
      .addColumn('opt_out_keywords', 'text', (c) => c.notNull())
      .addColumn('opt_in_keywords', 'text', (c) => c.notNull())
      .addColumn('opt_out_reply', 'text')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();

    const pg = db.getExecutor().adapter instanceof PostgresAdapter;
    for (const { table, columns } of EPOCH_TABLES) {
      const name = sql.raw(table);
      const cols = sql.raw(columns.join(', '));
      if (pg) {
        // bump_key_epoch() is migration 0013's; once per statement.
        await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch`)} AFTER INSERT OR UPDATE OF ${cols} OR DELETE ON ${name}
          FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch()`.execute(db);
        continue;
      }
      const bump = sql.raw('BEGIN UPDATE key_epoch SET epoch = epoch + 1 WHERE id = 1; END');
      await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch_insert`)} AFTER INSERT ON ${name} ${bump}`.execute(db);
      await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch_update`)} AFTER UPDATE OF ${cols} ON ${name} ${bump}`.execute(
        db,
      );
      await sql`CREATE TRIGGER ${sql.raw(`${table}_key_epoch_delete`)} AFTER DELETE ON ${name} ${bump}`.execute(db);
    }
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('org_consent_rules').execute();
    await db.schema.dropTable('number_accounts').execute();
    await db.schema.dropTable('number_templates').execute();
  },
};
