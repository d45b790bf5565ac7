import { type Kysely, Migrator, sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider, migrationProviderWith } from '../../src/db/migrations/index.js';
import { endpointAddressProblem } from '../../src/events/address-guard.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { EVENT_DELIVERY_QUEUE, emitEvent, eventId } from '../../src/events/event.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';

const FAST = { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true', PARLEY_JOB_POLL_MS: '20' };

describe.each(DIALECTS)('event endpoint signing secrets at rest (%s)', (dialect) => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createTestApp(dialect, { env: FAST });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const stored = (id: string) =>
    t.ctx.db
      .selectFrom('event_endpoints')
      .select(['secret', 'previous_secret'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('are stored sealed (created and rotated from the CLI), and deliveries are signed with both during a rotation', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const where = `/hook-${randomBase62(8)}`;
    const created = await runCli(
      ['endpoint', 'create', '--org', org.id, '--url', `${receiver.url}${where}`, '--json'],
      t.env,
    );
    expect(created.code).toBe(0);
    const ep = created.json<{ id: string; secret: string }>();
    const first = await stored(ep.id);
    expect(first.secret).not.toContain('whsec_');
    expect(first.secret).not.toContain(ep.secret.slice(6));
    expect(t.ctx.messaging.secrets.open(first.secret)).toBe(ep.secret);

    const rotated = await runCli(['endpoint', 'rotate-secret', '--id', ep.id, '--json'], t.env);
    expect(rotated.code).toBe(0);
    const { secret } = rotated.json<{ secret: string }>();
    const second = await stored(ep.id);
    expect(`${second.secret} ${second.previous_secret}`).not.toContain('whsec_');
    expect(t.ctx.messaging.secrets.open(second.secret)).toBe(secret);
    expect(t.ctx.messaging.secrets.open(second.previous_secret ?? '')).toBe(ep.secret);

    await emitEvent(
      { db: t.ctx.db, jobs: t.ctx.jobs, clock: t.ctx.clock },
      {
        id: eventId('message.status', randomBase62(10)),
        type: 'message.status',
        orgId: org.id,
        agentId: agent.id,
        data: {},
        at: Date.now(),
      },
    );
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const [got] = receiver.received.filter((r) => r.path === where);
    const headers = {
      'webhook-id': String(got?.headers['webhook-id']),
      'webhook-timestamp': String(got?.headers['webhook-timestamp']),
      'webhook-signature': String(got?.headers['webhook-signature']),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(got?.body ?? '', headers)).toMatchObject({ type: 'message.status' });
    expect(new Webhook(ep.secret).verify(got?.body ?? '', headers)).toMatchObject({ type: 'message.status' });
  });

  it('migration 0017 seals what earlier versions stored in clear; its down opens them again', async () => {
    const schema =
      dialect === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(t.ctx.db)).rows[0]?.schema
        : undefined;
    const where = schema ? { migrationTableSchema: schema } : {};
    const withBox = new Migrator({
      db: t.ctx.db,
      provider: migrationProviderWith({ secrets: () => t.ctx.messaging.secrets }),
      ...where,
    });
    const down = await withBox.migrateTo('0016-one-dead-letter-store');
    expect(down.error).toBeUndefined();
    // Every endpoint of the earlier tests is in clear again (the down opened them).
    const all = await t.ctx.db.selectFrom('event_endpoints').select(['id', 'secret']).execute();
    for (const row of all) expect(row.secret).toMatch(/^whsec_/);

    // What 0016 wrote: secrets in clear, a current and a previous one.
    const org = await makeOrg(t.ctx);
    const current = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    const previous = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
    const id = `ep_${randomBase62(16)}`;
    await (t.ctx.db as unknown as Kysely<{ event_endpoints: Record<string, unknown> }>)
      .insertInto('event_endpoints')
      .values({
        id,
        org_id: org.id,
        agent_id: null,
        url: 'https://example.com/hook',
        events: '*',
        secret: current,
        previous_secret: previous,
        previous_secret_until: Date.now() + 60_000,
        disabled_at: null,
        disabled_reason: null,
        failing_since: null,
        created_at: Date.now(),
      })
      .execute();

    // Without the secret box the migration refuses, saying why, and changes nothing.
    const bare = new Migrator({ db: t.ctx.db, provider: migrationProvider, ...where });
    const refused = await bare.migrateToLatest();
    expect(String(refused.error)).toMatch(/needs the secret key/);
    expect((await stored(id)).secret).toBe(current);

    const up = await withBox.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(up.results?.map((r) => r.migrationName)).toContain('0017-sealed-endpoint-secrets');
    const sealed = await stored(id);
    expect(`${sealed.secret} ${sealed.previous_secret}`).not.toContain('whsec_');
    expect(t.ctx.messaging.secrets.open(sealed.secret)).toBe(current);
    expect(t.ctx.messaging.secrets.open(sealed.previous_secret ?? '')).toBe(previous);

    const again = await withBox.migrateTo('0016-one-dead-letter-store');
    expect(again.error).toBeUndefined();
    expect(await stored(id)).toEqual({ secret: current, previous_secret: previous });
    expect((await withBox.migrateToLatest()).error).toBeUndefined();
  });
});

describe.each(DIALECTS)('endpoint addresses: https:// unless private addresses are allowed (%s)', (dialect) => {
  let strict: TestApp;
  beforeAll(async () => {
    strict = await createTestApp(dialect);
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('http:// is refused at creation with a sentence (CLI and service); https:// is taken', async () => {
    const org = await makeOrg(strict.ctx);
    const cli = await runCli(
      ['endpoint', 'create', '--org', org.id, '--url', 'http://hooks.example.com/x'],
      strict.env,
    );
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('An endpoint URL must be https://');
    await expect(
      createEndpoint(strict.ctx, { orgId: org.id, url: 'http://hooks.example.com/x' }),
    ).rejects.toMatchObject({ code: 'INVALID_BODY', message: expect.stringMatching(/must be https:\/\//) });
    const ok = await createEndpoint(strict.ctx, { orgId: org.id, url: 'https://hooks.example.com/x' });
    expect(ok.url).toBe('https://hooks.example.com/x');
    expect(
      await strict.ctx.db.selectFrom('event_endpoints').select('url').where('org_id', '=', org.id).execute(),
    ).toEqual([{ url: 'https://hooks.example.com/x' }]);
  });
});

describe('endpointAddressProblem: the one rule for endpoint addresses', () => {
  const strict = { allowPrivate: false };
  const open = { allowPrivate: true };
  it('names what is refused at creation and what is refused at each delivery', () => {
    expect(endpointAddressProblem('https://hooks.example.com/x', strict)).toBeUndefined();
    expect(endpointAddressProblem('http://hooks.example.com/x', strict)).toMatchObject({ refusedAt: 'create' });
    expect(endpointAddressProblem('http://127.0.0.1:8080/x', open)).toBeUndefined();
    expect(endpointAddressProblem('ftp://example.com/x', open)?.message).toMatch(/must be http:\/\/ or https:\/\//);
    expect(endpointAddressProblem('https://u:p@example.com/', strict)?.message).toMatch(/user name or password/);
    expect(endpointAddressProblem('not a url', strict)).toMatchObject({ refusedAt: 'create' });
    expect(endpointAddressProblem(`https://example.com/${'a'.repeat(2048)}`, strict)?.message).toMatch(/2048/);
    expect(endpointAddressProblem('https://169.254.169.254/latest', strict)).toMatchObject({ refusedAt: 'delivery' });
    expect(endpointAddressProblem('https://[64:ff9b::a9fe:a9fe]/', strict)).toMatchObject({ refusedAt: 'delivery' });
    expect(endpointAddressProblem('https://169.254.169.254/latest', open)).toBeUndefined();
  });
});
