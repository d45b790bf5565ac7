import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { connectionOptions } from '../../src/db/database.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { PG_URL } from '../helpers/app.js';
import { createQuietTestApp, makeSendingTenant, postTemplateSend, startFakeProvider } from '../helpers/messaging.js';

/** `url` with `options` (server settings) as its libpq `options` parameter. */
function withOptions(url: string, options: string): string {
  const u = new URL(url);
  u.searchParams.set('options', options);
  return u.toString();
}

describe('the server settings of a pool connection', () => {
  it("are Parley's alone, or the user's followed by Parley's, which PostgreSQL applies last", () => {
    const parley = '-c search_path=parley_us -c statement_timeout=15000';
    expect(connectionOptions(undefined, parley)).toBe(parley);
    expect(connectionOptions(null, parley)).toBe(parley);
    expect(connectionOptions('   ', parley)).toBe(parley);
    expect(connectionOptions(' -c lock_timeout=4321 ', parley)).toBe(`-c lock_timeout=4321 ${parley}`);
  });
});

describe.skipIf(!PG_URL)('a DATABASE_URL with options of its own', () => {
  it("keeps them, while the region's schema and Parley's statement timeout still apply", async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.OPTIONS1' }] },
    }));
    // A search_path of the URL's own names a schema that does not exist: were it applied, no table
    // could be made and the app would not start.
    const nowhere = `nowhere_${randomBase62(10).toLowerCase()}`;
    const url = withOptions(PG_URL ?? '', `-c lock_timeout=4321 -c search_path=${nowhere} -c statement_timeout=123456`);
    const t = await createQuietTestApp('postgres', {
      env: { DATABASE_URL: url, PARLEY_PG_STATEMENT_TIMEOUT_MS: '7000', PARLEY_PROVIDER_BASE_URL: provider.url },
    });
    try {
      const { rows } = await sql<{ schema: string; lock: string; statement: string }>`
        select current_schema() as schema, current_setting('lock_timeout') as lock,
          current_setting('statement_timeout') as statement`.execute(t.ctx.db);
      expect(rows).toEqual([{ schema: t.env.PARLEY_PG_SCHEMA, lock: '4321ms', statement: '7s' }]);

      const tenant = await makeSendingTenant(t.ctx);
      const sent = await postTemplateSend(t, tenant.agentKey.auth);
      expect(sent.statusCode, sent.body).toBe(200);
      expect(sent.json().messageId).toBe('wamid.OPTIONS1');
      // Stored in the region's schema, named explicitly.
      const stored = await sql<{ n: number }>`
        select count(*) as n from ${sql.id(t.env.PARLEY_PG_SCHEMA ?? '', 'messages')}
        where provider_message_id = 'wamid.OPTIONS1'`.execute(t.ctx.db);
      expect(stored.rows).toEqual([{ n: 1 }]);
      const read = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.OPTIONS1',
        headers: tenant.agentKey.auth,
      });
      expect(read.statusCode, read.body).toBe(200);
      expect(read.json().message).toMatchObject({ messageId: 'wamid.OPTIONS1', status: 'accepted' });
    } finally {
      await t.close();
      await provider.close();
    }
  });
});
