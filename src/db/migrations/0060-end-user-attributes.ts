import { type Kysely, type Migration, sql } from 'kysely';

/**
 * End-user attributes: the object as the record shows it (`attributes`, JSON text like tags), and
 * `end_user_attributes`, one row per key, that the `attribute=key:value` filter and segments read.
 *
 * Why a side table and not an index on the JSON: an expression index on SQLite needs a fixed
 * path (`json_extract(attributes, '$.plan')`), so no index could serve any key there; a side table
 * indexed on (org_id, name, value) serves every key on both databases the same way, as
 * end_user_tags does for tags (on PostgreSQL a jsonb GIN index would also serve `@>`, but would
 * make numbers and booleans compare as JSON values, not as their text). The index takes the first
 * 200 characters of the value: a whole value of 1,000 characters could pass PostgreSQL's limit of
 * an index entry (2,704 bytes); the filter then compares the whole value on the rows found.
 */
export const endUserAttributes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('end_users')
      .addColumn('attributes', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute();
    await db.schema
      .createTable('end_user_attributes')
      .addColumn('end_user_id', 'text', (c) => c.notNull().references('end_users.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      /** The value as text: strings as they are, numbers and booleans as their JSON text. */
      .addColumn('value', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('end_user_attributes_pk', ['end_user_id', 'name'])
      .execute();
    await sql`create index end_user_attributes_org_name_value_idx on end_user_attributes (org_id, name, substr(value, 1, 200), end_user_id)`.execute(
      db,
    );
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('end_user_attributes').execute();
    await db.schema.alterTable('end_users').dropColumn('attributes').execute();
  },
};
