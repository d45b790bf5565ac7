import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { withStatementCache } from '../../src/db/statement-cache.js';

interface Tables {
  notes: { id: number; body: string };
}

/** Records the SQL of every statement the connection prepares from now on. */
function recordPrepares(sqlite: SQLite.Database): string[] {
  const seen: string[] = [];
  const prepare = sqlite.prepare.bind(sqlite);
  sqlite.prepare = ((source: string) => {
    seen.push(source);
    return prepare(source);
  }) as typeof sqlite.prepare;
  return seen;
}

describe("Kysely's statements on SQLite, prepared once", () => {
  let dir: string;
  let sqlite: SQLite.Database;
  /** The SQL of every statement prepared on the connection, in order. */
  let prepared: string[];
  /** The connection's own prepare, not counted. */
  let prepare: (source: string) => SQLite.Statement;

  const kysely = (size?: number) =>
    new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite, size) }) });
  const noteById = (db: Kysely<Tables>, id: number) =>
    db.selectFrom('notes').select(['id', 'body']).where('id', '=', id).executeTakeFirst();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-statements-'));
    sqlite = new SQLite(join(dir, 'notes.sqlite'));
    sqlite.exec('create table notes (id integer primary key, body text not null)');
    const insert = sqlite.prepare('insert into notes (id, body) values (?, ?)');
    for (let id = 1; id <= 5; id++) insert.run(id, `note ${id}`);
    prepare = sqlite.prepare.bind(sqlite);
    prepared = recordPrepares(sqlite);
  });
  afterEach(() => {
    if (sqlite.open) sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prepares a query once and runs it with each call’s own values', async () => {
    const db = kysely();
    expect(await noteById(db, 1)).toEqual({ id: 1, body: 'note 1' });
    expect(await noteById(db, 4)).toEqual({ id: 4, body: 'note 4' });
    expect(await noteById(db, 9)).toBeUndefined();
    await db.updateTable('notes').set({ body: 'changed' }).where('id', '=', 2).execute();
    await db.updateTable('notes').set({ body: 'changed again' }).where('id', '=', 3).execute();
    expect(await noteById(db, 2)).toEqual({ id: 2, body: 'changed' });
    expect(await noteById(db, 3)).toEqual({ id: 3, body: 'changed again' });
    // One select and one update, each prepared once.
    expect(prepared).toHaveLength(2);
    expect(prepared[0]).toMatch(/^select/);
    expect(prepared[1]).toMatch(/^update/);
  });

  it('gives a statement of its own to a query prepared while the same query is still being iterated', () => {
    // Kysely holds the connection while it streams, so this is the connection's own guard.
    const cached = withStatementCache(sqlite);
    const sqlText = 'select id from notes order by id';
    const iterating = cached.prepare(sqlText).iterate([]);
    const first = iterating.next();
    expect(first.value).toEqual({ id: 1 });
    const meanwhile = cached.prepare(sqlText);
    expect(meanwhile.all([])).toEqual([1, 2, 3, 4, 5].map((id) => ({ id })));
    expect([...iterating]).toEqual([2, 3, 4, 5].map((id) => ({ id })));
    expect(prepared.filter((s) => s === sqlText)).toHaveLength(2);
    // Once the iteration is over, the cached statement serves again.
    expect(cached.prepare(sqlText).all([])).toHaveLength(5);
    expect(prepared.filter((s) => s === sqlText)).toHaveLength(2);
  });

  it('answers the rows better-sqlite3 itself makes, whatever the columns are called', () => {
    const cached = withStatementCache(sqlite);
    const plain = (text: string, parameters: unknown[] = []) => prepare(text).all(...parameters);
    for (const text of [
      'select id, body from notes order by id',
      'select id, body, id * 10 as id from notes order by id', // a repeated name keeps its last value
      'select count(*), max(id) from notes', // names that are not plain
      "select id, null as missing, x'00ff' as bytes, 1.5 as half from notes where id = 2",
      'select id as __proto__ from notes where id = 1',
    ]) {
      expect(cached.prepare(text).all([]), text).toEqual(plain(text));
    }
    const rename = "update notes set body = 'renamed' where id <= ? returning id, body";
    expect(cached.prepare(rename).all([2])).toEqual([
      { id: 1, body: 'renamed' },
      { id: 2, body: 'renamed' },
    ]);
    expect(plain('select body from notes where id = 3')).toEqual([{ body: 'note 3' }]);
  });

  it('keeps the most recently used statements up to its size', async () => {
    const db = kysely(2);
    const byBody = (body: string) => db.selectFrom('notes').select('id').where('body', '=', body).execute();
    const count = () =>
      db
        .selectFrom('notes')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirst();
    await noteById(db, 1); // a
    await byBody('note 2'); // b
    await noteById(db, 3); // a again: now the most recent, b the least
    await count(); // c: b goes
    expect(prepared).toHaveLength(3);
    await noteById(db, 5); // a: still kept
    expect(prepared).toHaveLength(3);
    expect(await byBody('note 2')).toEqual([{ id: 2 }]); // b: prepared again
    expect(prepared).toHaveLength(4);
    expect(prepared[3]).toBe(prepared[1]);
  });

  it('answers with the new columns after the table changes', async () => {
    const db = kysely();
    const everything = () => db.selectFrom('notes').selectAll().where('id', '=', 1).executeTakeFirst();
    expect(await everything()).toEqual({ id: 1, body: 'note 1' });
    sqlite.exec("alter table notes add column tag text not null default 'none'");
    expect(await everything()).toEqual({ id: 1, body: 'note 1', tag: 'none' });
  });

  it('is how a Parley database runs the queries it builds', async () => {
    const database = await openDatabase({ kind: 'sqlite', file: join(dir, 'parley.sqlite'), busyTimeoutMs: 5000 });
    try {
      const raw = database.sqlite;
      if (!raw) throw new Error('expected a SQLite database');
      const seen = recordPrepares(raw);
      const { db } = database;
      await db.schema
        .createTable('probe')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .execute();
      for (let i = 0; i < 3; i++) {
        await db
          .insertInto('probe' as never)
          .values({ id: i } as never)
          .execute();
      }
      expect(seen.filter((s) => s.startsWith('insert'))).toHaveLength(1);
      expect(raw.prepare('select count(*) as n from probe').get()).toEqual({ n: 3 });
    } finally {
      await database.close();
    }
  });
});

describe('a LIMIT on a Parley SQLite database', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-limit-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('is bound through a cast, so one prepared statement serves every page size', async () => {
    // A bare bound LIMIT makes SQLite prepare the statement again on every run (it reads the value
    // while planning); the cast keeps one plan. The rows are the same.
    const database = await openDatabase({ kind: 'sqlite', file: join(dir, 'parley.sqlite'), busyTimeoutMs: 5000 });
    try {
      const raw = database.sqlite;
      if (!raw) throw new Error('expected a SQLite database');
      raw.exec('create table probe (id integer primary key)');
      const insert = raw.prepare('insert into probe (id) values (?)');
      for (let id = 1; id <= 10; id++) insert.run(id);
      const seen = recordPrepares(raw);
      const db = database.db as unknown as Kysely<{ probe: { id: number } }>;
      const query = (limit: number, offset = 0) =>
        db.selectFrom('probe').select('id').orderBy('id').limit(limit).offset(offset);
      const page = (limit: number, offset = 0) => query(limit, offset).execute();

      expect(query(3).compile().sql).toMatch(/ limit cast\(\? as integer\) offset \?$/);
      expect(query(3).compile().parameters).toEqual([3, 0]);
      expect((await page(3)).map((r) => r.id)).toEqual([1, 2, 3]);
      expect((await page(5, 2)).map((r) => r.id)).toEqual([3, 4, 5, 6, 7]);
      expect(await page(0)).toEqual([]);
      expect((await page(50, 8)).map((r) => r.id)).toEqual([9, 10]);
      expect(seen.filter((s) => s.startsWith('select'))).toHaveLength(1);
    } finally {
      await database.close();
    }
  });
});
