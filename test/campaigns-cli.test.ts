/** The campaign commands of the CLI (the build), on the same database as a running app. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { makeAgent, makeOrg } from './helpers/factories.js';

describe.each(DIALECTS)('parley campaign (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, lists, shows, pauses and resumes a campaign', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const cli = (...args: string[]) => runCli(args, t.env);

    const made = await cli(
      ...['campaign', 'create', '--org', org.id, '--name', 'Spring sale', '--agent', agent.id],
      ...['--template', 'order_update', '--language', 'en_US', '--json'],
    );
    expect(made.code, made.stderr).toBe(0);
    const created = made.json<Record<string, unknown>>();
    expect(created).toEqual({
      id: expect.stringMatching(/^cmp_[0-9A-Za-z]{22}$/),
      name: 'Spring sale',
      agentId: agent.id,
      template: 'order_update',
      language: 'en_US',
      status: 'active',
    });
    const id = String(created.id);
    // Recorded in the organization's audit log, with the campaign.
    const audit = await t.ctx.db
      .selectFrom('audit_log')
      .select(['actor', 'action', 'target_type', 'target_id'])
      .where('org_id', '=', org.id)
      .execute();
    expect(audit).toEqual([{ actor: 'cli', action: 'campaign.created', target_type: 'campaign', target_id: id }]);

    const list = await cli('campaign', 'list', '--org', org.id, '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(list.json()).toEqual([created]);
    const table = await cli('campaign', 'list', '--org', org.id);
    expect(table.stdout).toMatch(/Spring sale/);

    const show = await cli('campaign', 'show', '--org', org.id, '--id', id, '--json');
    expect(show.code, show.stderr).toBe(0);
    expect(show.json()).toEqual({
      ...created,
      counts: { queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 },
    });

    const paused = await cli('campaign', 'pause', '--org', org.id, '--id', id, '--json');
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.json()).toMatchObject({ id, status: 'paused' });
    const stored = await t.ctx.db.selectFrom('campaigns').select('status').where('id', '=', id).executeTakeFirst();
    expect(stored?.status).toBe('paused');

    const resumed = await cli('campaign', 'resume', '--org', org.id, '--id', id);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed campaign cmp_\w+ \(Spring sale\).*active/);

    const key = await cli(
      ...['key', 'create', '--org', org.id, '--label', 'spring', '--scope', 'campaign', '--campaign', id, '--json'],
    );
    expect(key.code, key.stderr).toBe(0);
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/campaigns/${id}`,
      headers: { authorization: `Bearer ${key.json<{ key: string }>().key}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, status: 'active' });
  });

  it('refuses what cannot be a campaign with a sentence and exit code 1', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const cli = (...args: string[]) => runCli(args, t.env);
    const bad = await cli(
      ...['campaign', 'create', '--org', org.id, '--name', 'X', '--agent', agent.id, '--template', 't'],
      ...['--language', 'english'],
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('parley: language must look like en_US (xx_XX), got "english"\n');
    const unknown = await cli(
      ...['campaign', 'create', '--org', org.id, '--name', 'X', '--agent', 'agt_nope', '--template', 't'],
      ...['--language', 'en_US'],
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown agent "agt_nope"/);
    const missing = await cli('campaign', 'pause', '--org', org.id, '--id', 'cmp_nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No campaign with ID 'cmp_nope'/);
  });
});
