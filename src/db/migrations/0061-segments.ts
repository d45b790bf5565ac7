import type { Kysely, Migration } from 'kysely';

/** Segments: an organization's saved filters of end users, listed newest first. */
export const segments: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('segments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      /** JSON: the filter as given (tags, origin, attributes, consent, times). */
      .addColumn('filter', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      /** The members counted last (at creation, at each read of the one segment), and when: what lists show. */
      .addColumn('count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('counted_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('segments_org_created_idx')
      .on('segments')
      .columns(['org_id', 'created_at', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('segments').execute();
  },
};
