import { type Kysely, sql } from 'kysely';
import { batchedReads, precompiled, slot } from './precompiled.js';
import type { DB } from './schema.js';

/** The tables whose records belong to an organization by ID (an `id` and an `org_id` column). */
export type OrgTable = { [T in keyof DB]: DB[T] extends { id: unknown; org_id: unknown } ? T : never }[keyof DB];

/** A record read by ID beside the key epoch, in one snapshot; no record when none matched. */
export interface WithKeyEpoch<Row> {
  readonly row: Row | undefined;
  readonly epoch: number;
}

/** One read: the organization and the record's ID. */
export interface ByIdRead {
  readonly orgId: string;
  readonly id: string;
}

/** Splits a joined row (the record's columns, `key_epoch`, maybe `i`) into the record and the epoch. */
export function splitKeyEpoch<Row>(found: Record<string, unknown> | undefined): WithKeyEpoch<Row> {
  if (!found) throw new Error('the key epoch row is missing (migration 0013-key-epoch)');
  const { key_epoch, i: _order, ...row } = found;
  return { row: row.id === null || row.id === undefined ? undefined : (row as Row), epoch: Number(key_epoch) };
}

/**
 * A GET by ID whose key the cache admitted: the record (by organization and ID) and the key epoch in
 * one statement, so the key is confirmed without a round trip of its own (the protocol, and the
 * wrapper services read through, are in src/auth/key-epoch.ts; this is only the statement's shape,
 * for any table of records an organization owns by ID, named by the feature that calls it). `one` is the statement of
 * a single read (always one row, the epoch's). The reads of one turn of the event loop are taken
 * together just after it (see `batchedReads`): on PostgreSQL they share one statement, on SQLite
 * they run one after the other; each still sees every write committed before its request came in.
 * The shared statement's arrays are read through sub-selects so that the prepared statement keeps
 * one generic plan (a plan made for the values at hand would look cheaper every time and be made
 * again for every run).
 */
export function byIdWithKeyEpoch<Row>(
  table: OrgTable,
  one: (db: Kysely<DB>, read: ByIdRead) => Promise<Record<string, unknown> | undefined>,
): (db: Kysely<DB>, read: ByIdRead) => Promise<WithKeyEpoch<Row>> {
  const many = precompiled<Record<string, unknown>>((db) => ({
    compile: () =>
      sql`select t.*, k.epoch as key_epoch, v.i
        from key_epoch k
        cross join unnest((select ${slot<string[]>(0)}::text[]), (select ${slot<string[]>(1)}::text[]))
          with ordinality as v(org_id, id, i)
        left join ${sql.table(table)} t on t.org_id = v.org_id and t.id = v.id
        where k.id = 1
        order by v.i`.compile(db),
  }));
  return batchedReads<ByIdRead, WithKeyEpoch<Row>>(
    async (db, read) => splitKeyEpoch<Row>(await one(db, read)),
    async (db, reads) => {
      const { rows } = await many(db, [reads.map((r) => r.orgId), reads.map((r) => r.id)]);
      return reads.map((_, i) => splitKeyEpoch<Row>(rows[i]));
    },
  );
}
