import { copyFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import type { DatabaseConfig } from '../../src/config.js';
import type { Templates } from './template-build.js';

/** What the global setup hands every test file: the templates of test/helpers/template-build.ts. */
declare module 'vitest' {
  export interface ProvidedContext {
    parleyTemplates: Templates;
  }
}

/**
 * Makes the empty database of a new test app a copy of the template: the SQLite file where none is
 * yet, the PostgreSQL schema where none is yet. Nothing when there is no template, or when the
 * app's job lease differs from the template's (its queues are made with the lease).
 */
export async function seedFromTemplate(database: DatabaseConfig, leaseMs: number): Promise<void> {
  const templates = inject('parleyTemplates') ?? {};
  if (database.kind === 'sqlite') {
    // Only into a folder already there: making the data folder is Parley's to do (and to test).
    if (templates.sqlite && existsSync(dirname(database.file)) && !existsSync(database.file)) {
      copyFileSync(templates.sqlite, database.file);
    }
    return;
  }
  const template = templates.postgres;
  if (!template || template.leaseMs !== leaseMs) return;
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_namespace where nspname = $1', [database.schema]);
    if (rowCount) return;
    await client.query(template.sql.replaceAll(template.schema, database.schema));
  } finally {
    await client.end();
  }
}
