import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

const BACKFILL_CHUNK = 2000;

/**
 * The name key as this migration computes it (NFKC, then lower-cased by JavaScript). A copy of
 * end-users' searchKey as it stood, so that this step of history stays what it was whatever
 * becomes of the live function.
 */
const searchKey = (text: string): string => text.normalize('NFKC').toLowerCase();

/**
 * `q` matches names through a key computed in JavaScript (end_users.name_search, see searchKey),
 * so that SQLite, whose lower() folds ASCII only, finds `ÉMILE` for `q=émile` as PostgreSQL does.
 * Names, emails and phones are matched as prefix ranges (`col >= p AND col < next(p)`), which an
 * index answers; on PostgreSQL those columns compare in byte order (COLLATE "C"), the order SQLite
 * uses, because a linguistic collation skips punctuation and would put `ab-c` between `abc` and
 * `abd`. Equality, and so the unique indexes on email and phone, is the same under either collation.
 */
export const endUserSearch: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    if (postgres) {
      await sql`ALTER TABLE end_users
        ALTER COLUMN email TYPE text COLLATE "C",
        ALTER COLUMN phone TYPE text COLLATE "C",
        ADD COLUMN name_search text COLLATE "C"`.execute(db);
    } else {
      await db.schema.alterTable('end_users').addColumn('name_search', 'text').execute();
    }

    // Backfill in chunks, keyed on id, each one UPDATE ... FROM (VALUES ...) (both databases name
    // the VALUES columns column1, column2).
    let after = '';
    for (;;) {
      const { rows } = await sql<{ id: string; name: string }>`
        SELECT id, name FROM end_users WHERE name IS NOT NULL AND id > ${after} ORDER BY id LIMIT ${BACKFILL_CHUNK}`.execute(
        db,
      );
      const last = rows[rows.length - 1];
      if (!last) break;
      const values = rows.map((r) => sql`(${r.id}, ${searchKey(r.name)})`);
      await sql`UPDATE end_users SET name_search = v.column2
        FROM (VALUES ${sql.join(values)}) AS v
        WHERE end_users.id = v.column1`.execute(db);
      after = last.id;
    }

    await db.schema
      .createIndex('end_users_org_name_search_idx')
      .on('end_users')
      .columns(['org_id', 'name_search'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('end_users_org_name_search_idx').execute();
    await db.schema.alterTable('end_users').dropColumn('name_search').execute();
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`ALTER TABLE end_users
        ALTER COLUMN email TYPE text COLLATE "default",
        ALTER COLUMN phone TYPE text COLLATE "default"`.execute(db);
    }
  },
};
