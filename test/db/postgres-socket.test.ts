import { existsSync } from 'node:fs';
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { describePgUrl, openDatabase } from '../../src/db/database.js';
import { PG_URL } from '../helpers/app.js';
import { createQuietTestApp, makeSendingTenant, postTemplateSend, startFakeProvider } from '../helpers/messaging.js';

const SOCKET_DIR = '/var/run/postgresql';

/** The test database reached through PostgreSQL's Unix socket instead of TCP, when it has one here. */
function socketUrlOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const u = new URL(url);
  const port = u.port || '5432';
  if (!existsSync(`${SOCKET_DIR}/.s.PGSQL.${port}`)) return undefined;
  return `postgresql://${u.username || 'postgres'}@${encodeURIComponent(SOCKET_DIR)}:${port}${u.pathname}`;
}

const SOCKET_URL = socketUrlOf(PG_URL);

describe('where a PostgreSQL URL points', () => {
  it('names host, port and database of a TCP URL, never its password', async () => {
    expect(await describePgUrl('postgres://parley:s3cret@db.example:6543/parley')).toBe('db.example:6543/parley');
    expect(await describePgUrl('postgres://parley:s3cret@db.example/parley')).toBe('db.example:5432/parley');
  });

  it('names the socket file and the database of a Unix-socket URL, in either spelling', async () => {
    const expected = 'socket /var/run/postgresql/.s.PGSQL.5432, database parley';
    expect(await describePgUrl('postgresql://parley:s3cret@%2Fvar%2Frun%2Fpostgresql/parley')).toBe(expected);
    expect(await describePgUrl('postgresql://parley:s3cret@/parley?host=/var/run/postgresql')).toBe(expected);
  });

  it('a socket that is not there stops start-up with that socket named and no password', async () => {
    const url = 'postgresql://parley:s3cret@%2Fnonexistent%2Fparley-socket:6000/parley';
    const opening = openDatabase({
      kind: 'postgres',
      url,
      schema: 'parley_us',
      poolSize: 1,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 5_000,
    });
    const err = await opening.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    if (!(err instanceof ConfigError)) return;
    expect(err.message).toMatch(
      /^cannot connect to PostgreSQL at socket \/nonexistent\/parley-socket\/\.s\.PGSQL\.6000, database parley \(DATABASE_URL\): /,
    );
    expect(err.message).not.toContain('s3cret');
  });
});

describe.skipIf(!SOCKET_URL)('PostgreSQL through its Unix socket', () => {
  it('serves the API: a send is answered and stored, and read back by ID', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.SOCKET1' }] },
    }));
    const t = await createQuietTestApp('postgres', {
      env: { DATABASE_URL: SOCKET_URL ?? '', PARLEY_PROVIDER_BASE_URL: provider.url },
    });
    try {
      expect(t.ctx.database.dialect).toBe('postgres');
      // A connection over a Unix socket has no server address (TCP would give 127.0.0.1).
      const { rows } = await sql<{ addr: string | null }>`select inet_server_addr() as addr`.execute(t.ctx.db);
      expect(rows).toEqual([{ addr: null }]);
      const tenant = await makeSendingTenant(t.ctx);
      const sent = await postTemplateSend(t, tenant.agentKey.auth);
      expect(sent.statusCode).toBe(200);
      expect(sent.json().messageId).toBe('wamid.SOCKET1');
      const read = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.SOCKET1',
        headers: tenant.agentKey.auth,
      });
      expect(read.statusCode).toBe(200);
      expect(read.json().message).toMatchObject({ messageId: 'wamid.SOCKET1', status: 'accepted' });
      // The same database the TCP URL names: the socket is only another way in.
      const tcp = new pg.Client({ connectionString: PG_URL });
      await tcp.connect();
      try {
        const stored = await tcp.query(
          `select provider_message_id, status from "${t.env.PARLEY_PG_SCHEMA}".messages where provider_message_id = $1`,
          ['wamid.SOCKET1'],
        );
        expect(stored.rows).toEqual([{ provider_message_id: 'wamid.SOCKET1', status: 'accepted' }]);
      } finally {
        await tcp.end();
      }
    } finally {
      await t.close();
      await provider.close();
    }
  });
});
