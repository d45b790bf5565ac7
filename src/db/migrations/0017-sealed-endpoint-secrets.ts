import type { Kysely, Migration } from 'kysely';

/** Seals and opens a secret at rest (the region's secret box: src/numbers/secret-box.ts). */
export interface Sealer {
  seal(plain: string): string;
  open(sealed: string): string;
}

/** What migrations may need beyond the database: built only when a migration asks for it. */
export interface MigrationDeps {
  /** The secret box; absent, a migration with secrets to seal fails with a sentence. */
  readonly secrets?: () => Sealer;
}

/** The columns as this migration finds them (frozen history: not the feature's table type). */
interface EndpointSecrets {
  event_endpoints: { id: string; secret: string; previous_secret: string | null };
}

/** A clear signing secret, as migrations before this one stored it. */
const isClear = (value: string) => value.startsWith('whsec_');

/**
 * Event endpoints' signing secrets (`whsec_...`, the current and the previous one) are sealed
 * like provider tokens: a copy of the database alone can no longer sign events as Parley.
 * The columns keep their names and type; `down` opens them again.
 */
export function sealedEndpointSecrets(deps: MigrationDeps): Migration {
  const sealer = (): Sealer => {
    if (!deps.secrets) {
      throw new Error('sealing event endpoint secrets needs the secret key (PARLEY_SECRET_KEY or the data folder)');
    }
    return deps.secrets();
  };
  const rewrite = async (db: Kysely<EndpointSecrets>, change: (value: string) => string | undefined) => {
    const rows = await db.selectFrom('event_endpoints').select(['id', 'secret', 'previous_secret']).execute();
    for (const row of rows) {
      const secret = change(row.secret);
      const previous = row.previous_secret === null ? undefined : change(row.previous_secret);
      if (secret === undefined && previous === undefined) continue;
      await db
        .updateTable('event_endpoints')
        .set({
          ...(secret !== undefined ? { secret } : {}),
          ...(previous !== undefined ? { previous_secret: previous } : {}),
        })
        .where('id', '=', row.id)
        .execute();
    }
  };
  return {
    async up(db: Kysely<unknown>) {
      const typed = db as Kysely<EndpointSecrets>;
      const some = await typed.selectFrom('event_endpoints').select('id').limit(1).execute();
      if (some.length === 0) return;
      let box: Sealer | undefined;
      await rewrite(typed, (value) => {
        if (!isClear(value)) return undefined;
        box ??= sealer();
        return box.seal(value);
      });
    },
    async down(db: Kysely<unknown>) {
      const typed = db as Kysely<EndpointSecrets>;
      let box: Sealer | undefined;
      await rewrite(typed, (value) => {
        if (isClear(value)) return undefined;
        box ??= sealer();
        return box.open(value);
      });
    },
  };
}
