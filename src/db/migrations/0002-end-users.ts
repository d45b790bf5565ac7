import type { Kysely, Migration } from 'kysely';

export const endUsers: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('end_users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('name', 'text')
      .addColumn('email', 'text')
      .addColumn('phone', 'text')
      .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('channel_identifiers', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('consent', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_at', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // Uniqueness is the database's job, so concurrent writers cannot both win. NULLs never collide.
    await db.schema
      .createIndex('end_users_org_email_uq')
      .on('end_users')
      .columns(['org_id', 'email'])
      .unique()
      .execute();
    await db.schema
      .createIndex('end_users_org_phone_uq')
      .on('end_users')
      .columns(['org_id', 'phone'])
      .unique()
      .execute();
    // Keyset pagination, newest first: any page costs one index seek.
    await db.schema
      .createIndex('end_users_org_created_idx')
      .on('end_users')
      .columns(['org_id', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('end_users_org_origin_created_idx')
      .on('end_users')
      .columns(['org_id', 'origin', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('end_users_org_updated_idx')
      .on('end_users')
      .columns(['org_id', 'updated_at'])
      .execute();

    await db.schema
      .createTable('end_user_tags')
      .addColumn('end_user_id', 'text', (c) => c.notNull().references('end_users.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('end_user_tags_pk', ['end_user_id', 'tag'])
      .execute();
    await db.schema
      .createIndex('end_user_tags_org_tag_idx')
      .on('end_user_tags')
      .columns(['org_id', 'tag', 'end_user_id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('end_user_tags').execute();
    await db.schema.dropTable('end_users').execute();
  },
};
