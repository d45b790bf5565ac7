import { type Kysely, type Migration, SqliteAdapter } from 'kysely';

/**
 * The job runner's tables. Dead letters on both databases; the jobs themselves in a table only on
 * SQLite, where the runner works them itself (on PostgreSQL pg-boss installs and migrates its own
 * tables in the region's schema at start-up).
 */
export const jobs: Migration = {
  async up(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof SqliteAdapter) {
      await db.schema
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('queue', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('run_at', 'bigint', (c) => c.notNull())
        .addColumn('locked_until', 'bigint')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_due_idx').on('jobs').columns(['queue', 'run_at']).execute();
    }
    await db.schema
      .createTable('job_dead_letters')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('queue', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .addColumn('failed_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('job_dead_letters_queue_idx')
      .on('job_dead_letters')
      .columns(['queue', 'failed_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('job_dead_letters').execute();
    await db.schema.dropTable('jobs').ifExists().execute();
  },
};
