import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

// SQLite only: the commands call the same services the API tests run on both databases.
describe('the template commands (sqlite)', () => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createMessagingApp('sqlite');
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });
  const cli = (...args: string[]) => runCli([...args, '--sandbox-url', t.sandbox.url], t.env);
  const statusOf = async (name: string) => {
    const res = await t.app.inject({ method: 'GET', url: '/api/templates', headers: tenant.agentKey.auth });
    return res.json<{ data: { name: string; status: string }[] }>().data.find((x) => x.name === name)?.status;
  };

  it('template sync reads the numbers’ templates; number add reads a new number’s at once', async () => {
    const synced = await cli('template', 'sync', '--org', tenant.org.id, '--json');
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.json()).toEqual([
      expect.objectContaining({ numberId: tenant.number.id, phone: tenant.number.phone, synced: true, templates: 4 }),
    ]);
    const table = await cli('template', 'sync', '--org', tenant.org.id, '--agent', tenant.agent.id);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/NUMBER\s+SYNCED\s+TEMPLATES/);
    const phone = randomPhone();
    const added = await cli('number', 'add', '--org', tenant.org.id, '--phone', phone);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('templates: 4 templates');
    const unknown = await cli('template', 'sync', '--org', tenant.org.id, '--agent', 'agt_nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown agent "agt_nope"');
  });

  it('sandbox template create makes one PENDING; set-status approves it through the webhook', async () => {
    const name = `cli_${randomBytes(4).toString('hex')}`;
    const made = await cli(
      'sandbox',
      'template',
      'create',
      '--name',
      name,
      '--language',
      'en_US',
      '--category',
      'MARKETING',
      '--body-params',
      '2',
    );
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain(`made template ${name} (en_US), PENDING`);
    await cli('template', 'sync', '--org', tenant.org.id);
    expect(await statusOf(name)).toBe('PENDING');
    const approved = await cli(
      'sandbox',
      'template',
      'set-status',
      '--name',
      name,
      '--language',
      'en_US',
      '--status',
      'approved',
    );
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`template ${name} (en_US) is APPROVED; Parley was told`);
    await until(async () => (await statusOf(name)) === 'APPROVED', 'the approval applied');
    const bad = await cli(
      'sandbox',
      'template',
      'set-status',
      '--name',
      name,
      '--language',
      'en_US',
      '--status',
      'GONE',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('status must be one of APPROVED');
    const twice = await cli(
      'sandbox',
      'template',
      'create',
      '--name',
      name,
      '--language',
      'en_US',
      '--category',
      'UTILITY',
    );
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('already exists');
  });
});

// SQLite only: the schedule facility is the job runner's, tested on both databases in test/jobs.
describe('the scheduled sync (sqlite)', () => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp('sqlite', { env: { PARLEY_TEMPLATE_SYNC_MS: '200' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('reads a new number’s templates within PARLEY_TEMPLATE_SYNC_MS, and its quality', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const list = () => t.app.inject({ method: 'GET', url: '/api/templates', headers: tenant.agentKey.auth });
    await until(async () => (await list()).json<{ data: unknown[] }>().data.length === 4, 'the scheduled sync');
    expect((await list()).json().syncedAt).toEqual(expect.any(Number));
  });
});
