/**
 * Seeds N end users for one new paid organization, fast, and prints its ID and an organization key
 * holding End-users. Uses the same configuration as `parley serve` (PARLEY_DATA_DIR, DATABASE_URL,
 * PARLEY_PG_SCHEMA, PARLEY_REGION).
 *
 *   node --import tsx bench/seed-endusers.ts 1000000            # SQLite in ./data
 *   DATABASE_URL=postgres://... node --import tsx bench/seed-endusers.ts 1000000
 *
 * SQLite: one prepared statement inside transactions of 50,000 rows. PostgreSQL: INSERT ... SELECT
 * FROM unnest(arrays) of 10,000 rows a statement. Every 10th record carries the tag `vip`; emails and
 * phones are unique; created_at goes up by one ms per record so "newest first" is the reverse of it.
 */
import { fileURLToPath } from 'node:url';
import {
  createKey,
  createOrganization,
  loadConfig,
  migrateToLatest,
  newId,
  openDatabase,
  searchKey,
  sql,
  systemClock,
} from './internals.js';

export interface SeedResult {
  orgId: string;
  key: string;
  n: number;
  ms: number;
}

function record(i: number, orgId: string, start: number) {
  const createdAt = start + i;
  const name = `Seed User ${i}`;
  return {
    id: newId('eu'),
    org_id: orgId,
    name,
    name_search: searchKey(name),
    email: `seed.${i}@bench.example.com`,
    // Unique but not necessarily valid phone numbers: the seed writes straight to the table.
    phone: `+1${String(1000000000 + i)}`,
    tags: i % 10 === 0 ? '["vip"]' : '[]',
    origin: (['inbound', 'imported', 'manual'] as const)[i % 3] ?? 'manual',
    channel_identifiers: '{}',
    consent: '{}',
    created_at: createdAt,
    last_seen_at: null,
    updated_at: createdAt,
  };
}

export async function seedEndUsers(
  env: Record<string, string | undefined>,
  n: number,
  /** false when the server about to be measured has migrated the database itself (another build). */
  migrate = true,
): Promise<SeedResult> {
  const config = loadConfig({}, env);
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  const database = await openDatabase(region.database, { poolSize: 2 });
  try {
    if (migrate) await migrateToLatest(database.db);
    const org = await createOrganization(database.db, systemClock, {
      name: 'Bench',
      plan: 'paid',
      defaultCountry: 'US',
    });
    const { key } = await createKey(database.db, systemClock, region.region, {
      orgId: org.id,
      label: 'bench',
      scope: 'organization',
      permissions: ['endusers'],
    });
    const started = Date.now();
    const start = started - n - 1000;
    if (database.sqlite) {
      const s = database.sqlite;
      const insertUser = s.prepare(
        `INSERT INTO end_users (id, org_id, name, name_search, email, phone, tags, origin, channel_identifiers, consent, created_at, last_seen_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const insertTag = s.prepare('INSERT INTO end_user_tags (end_user_id, org_id, tag) VALUES (?, ?, ?)');
      const chunk = s.transaction((from: number, to: number) => {
        for (let i = from; i < to; i++) {
          const r = record(i, org.id, start);
          insertUser.run(
            r.id,
            r.org_id,
            r.name,
            r.name_search,
            r.email,
            r.phone,
            r.tags,
            r.origin,
            r.channel_identifiers,
            r.consent,
            r.created_at,
            r.last_seen_at,
            r.updated_at,
          );
          if (i % 10 === 0) insertTag.run(r.id, org.id, 'vip');
        }
      });
      for (let from = 0; from < n; from += 50_000) chunk(from, Math.min(n, from + 50_000));
      s.pragma('optimize');
    } else {
      for (let from = 0; from < n; from += 10_000) {
        const rows = Array.from({ length: Math.min(n, from + 10_000) - from }, (_, k) =>
          record(from + k, org.id, start),
        );
        const col = <K extends keyof (typeof rows)[number]>(k: K) => rows.map((r) => r[k]);
        await sql`
          INSERT INTO end_users (id, org_id, name, name_search, email, phone, tags, origin, channel_identifiers, consent, created_at, last_seen_at, updated_at)
          SELECT * FROM unnest(
            ${col('id')}::text[], ${col('org_id')}::text[], ${col('name')}::text[], ${col('name_search')}::text[], ${col('email')}::text[],
            ${col('phone')}::text[], ${col('tags')}::text[], ${col('origin')}::text[], ${col('channel_identifiers')}::text[],
            ${col('consent')}::text[], ${col('created_at')}::bigint[], ${col('last_seen_at')}::bigint[], ${col('updated_at')}::bigint[]
          )`.execute(database.db);
        const tagged = rows.filter((_, k) => (from + k) % 10 === 0);
        await sql`
          INSERT INTO end_user_tags (end_user_id, org_id, tag)
          SELECT id, ${org.id}, 'vip' FROM unnest(${tagged.map((r) => r.id)}::text[]) AS t(id)`.execute(database.db);
      }
      await sql`ANALYZE end_users`.execute(database.db);
      await sql`ANALYZE end_user_tags`.execute(database.db);
    }
    return { orgId: org.id, key, n, ms: Date.now() - started };
  } finally {
    await database.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = Number(process.argv[2] ?? 1_000_000);
  if (!Number.isInteger(n) || n < 1) throw new Error('usage: seed-endusers.ts N');
  const result = await seedEndUsers(process.env, n);
  console.log(JSON.stringify(result));
}
