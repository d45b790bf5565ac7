import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { precompiled, slot } from '../../src/db/precompiled.js';
import { isWindowOpen } from '../../src/messaging/message.fast.js';
import { openWindow } from '../../src/messaging/window.repository.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';

const windowsOf = precompiled((db) =>
  db
    .selectFrom('messaging_windows as w')
    .leftJoin('messaging_windows as later', (join) =>
      join.onRef('later.number_id', '=', 'w.number_id').on('later.last_inbound_at', '>', slot<number>(1)),
    )
    .select(['w.number_id', 'w.user_phone', 'w.last_inbound_at', 'later.user_phone as later_phone'])
    .where('w.number_id', '=', slot<string>(0))
    .orderBy('w.user_phone')
    .orderBy('later.user_phone'),
);

const insertWindow = precompiled((db) =>
  db.insertInto('messaging_windows').values({ number_id: slot(0), user_phone: slot(1), last_inbound_at: slot(2) }),
);

describe.each(DIALECTS)('precompiled queries (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('run with new values each time, and read back what they wrote', async () => {
    await insertWindow(t.ctx.db, ['num_a', '+16505550001', 1000]);
    await insertWindow(t.ctx.db, ['num_a', '+16505550002', 2000]);
    expect(await isWindowOpen(t.ctx.db, 'num_a', '+16505550001', 1000 + 60_000)).toBe(true);
    expect(await isWindowOpen(t.ctx.db, 'num_a', '+16505550003', 1000)).toBe(false);
    await openWindow(t.ctx.db, 'num_a', '+16505550001', 500); // older: does not shorten it
    expect(await isWindowOpen(t.ctx.db, 'num_a', '+16505550001', 1000 + 24 * 3600_000)).toBe(true);
  });

  it('read rows the same as Kysely: column names, nulls, numbers, and no row at all', async () => {
    await insertWindow(t.ctx.db, ['num_rows', '+16505550201', 10]);
    await insertWindow(t.ctx.db, ['num_rows', '+16505550202', 20]);
    const viaKysely = (at: number, number = 'num_rows') =>
      t.ctx.db
        .selectFrom('messaging_windows as w')
        .leftJoin('messaging_windows as later', (join) =>
          join.onRef('later.number_id', '=', 'w.number_id').on('later.last_inbound_at', '>', at),
        )
        .select(['w.number_id', 'w.user_phone', 'w.last_inbound_at', 'later.user_phone as later_phone'])
        .where('w.number_id', '=', number)
        .orderBy('w.user_phone')
        .orderBy('later.user_phone')
        .execute();
    const rows = (await windowsOf(t.ctx.db, ['num_rows', 15])).rows;
    expect(rows).toEqual([
      { number_id: 'num_rows', user_phone: '+16505550201', last_inbound_at: 10, later_phone: '+16505550202' },
      { number_id: 'num_rows', user_phone: '+16505550202', last_inbound_at: 20, later_phone: '+16505550202' },
    ]);
    expect(rows).toEqual(await viaKysely(15));
    // A second run of the same statement, and one whose join finds nothing (nulls).
    const none = (await windowsOf(t.ctx.db, ['num_rows', 50])).rows;
    expect(none.map((r) => r.later_phone)).toEqual([null, null]);
    expect(none).toEqual(await viaKysely(50));
    expect((await windowsOf(t.ctx.db, ['num_absent', 0])).rows).toEqual([]);
  });

  it("never land inside another caller's transaction: a rollback there does not take them along", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const trx = t.ctx.db
      .transaction()
      .execute(async (tx) => {
        await tx
          .insertInto('messaging_windows')
          .values({ number_id: 'num_trx', user_phone: '+1', last_inbound_at: 1 })
          .execute();
        entered();
        await held;
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await inside;
    const outside = insertWindow(t.ctx.db, ['num_outside', '+1', 1]);
    release();
    await Promise.all([trx, outside]);
    const rows = await t.ctx.db
      .selectFrom('messaging_windows')
      .select('number_id')
      .where('number_id', 'in', ['num_trx', 'num_outside'])
      .execute();
    expect(rows.map((r) => r.number_id)).toEqual(['num_outside']);
  });

  it('writes issued together all commit, and a failing one fails alone', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ['num_group', `+1650555${String(i).padStart(4, '0')}`, i]);
    const duplicate = ['num_group', '+16505550007', 99]; // same primary key as row 7
    const results = await Promise.allSettled([...rows, duplicate].map((values) => insertWindow(t.ctx.db, values)));
    const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
    // SQLite runs the group in the order issued, so the later duplicate is the one refused; on
    // PostgreSQL the pool's connections race, so either of the two may win.
    if (dialect === 'sqlite') expect(rejected).toEqual([50]);
    else expect([[7], [50]]).toContainEqual(rejected);
    const stored = await t.ctx.db
      .selectFrom('messaging_windows')
      .select(['user_phone', 'last_inbound_at'])
      .where('number_id', '=', 'num_group')
      .orderBy('user_phone')
      .execute();
    expect(stored).toHaveLength(50);
    expect(stored.find((r) => r.user_phone === '+16505550007')?.last_inbound_at).toBe(rejected[0] === 50 ? 7 : 99);
  });

  it.runIf(dialect === 'sqlite')(
    'a write has committed when its promise settles: another connection sees it',
    async () => {
      await insertWindow(t.ctx.db, ['num_seen', '+16505550100', 5]);
      const other = new SQLite(t.ctx.database.sqlite?.name ?? '', { readonly: true });
      try {
        const row = other.prepare('SELECT last_inbound_at FROM messaging_windows WHERE number_id = ?').get('num_seen');
        expect(row).toEqual({ last_inbound_at: 5 });
      } finally {
        other.close();
      }
    },
  );
});
