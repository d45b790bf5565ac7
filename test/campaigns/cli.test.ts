/** The campaign commands of the CLI (the build), on the same database as a running app. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { runCli, runCliProcess } from '../helpers/cli.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';
import { call } from '../helpers/http.js';

describe.each(DIALECTS)('parley campaign (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  // Nine CLI processes: the bound the other many-process CLI tests have, for a busy machine.
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

    // Three reads at once: none changes anything.
    const [list, table, show] = await Promise.all([
      cli('campaign', 'list', '--org', org.id, '--json'),
      cli('campaign', 'list', '--org', org.id),
      cli('campaign', 'show', '--org', org.id, '--id', id, '--json'),
    ]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json()).toEqual([created]);
    expect(table.stdout).toMatch(/Spring sale/);

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
    const log = await cli('audit', 'list', '--org', org.id, '--json');
    expect(
      log
        .json<{ actor: string; action: string; targetId: string }[]>()
        .filter((e) => e.targetId === id)
        .map((e) => `${e.actor} ${e.action}`)
        .sort(),
    ).toEqual(['cli campaign.created', 'cli campaign.paused', 'cli campaign.resumed']);

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
  }, 120_000);

  it('removes a campaign: its keys are refused at once, its queued deliveries never go out, the audit log says so', async () => {
    // Jobs are not worked here, so the accepted recipients stay queued until the removal.
    const app = await createTestApp(dialect, { workJobs: false });
    try {
      const c = await makeCampaignTenant(app.ctx);
      const auth = c.campaignKey.auth;
      const accepted = await postRecipients(
        app,
        c.campaign.id,
        auth,
        phones(3).map((to) => ({ to })),
      );
      expect(accepted.statusCode, accepted.body).toBe(202);
      // The key is now in the server's cache.
      const before = await call(app, { method: 'GET', url: `/api/campaigns/${c.campaign.id}`, headers: auth });
      expect(before.statusCode).toBe(200);
      expect(before.json().counts.queued).toBe(3);

      // The real binary, as users run it (the other commands run in a thread: test/helpers/cli.ts).
      const removed = await runCliProcess(
        ['campaign', 'remove', '--org', c.org.id, '--id', c.campaign.id, '--json'],
        app.env,
      );
      expect(removed.code, removed.stderr).toBe(0);
      expect(removed.json()).toEqual({ id: c.campaign.id, name: 'Spring launch', removed: true, keys: 1, unsent: 3 });

      const after = await call(app, { method: 'GET', url: `/api/campaigns/${c.campaign.id}`, headers: auth });
      expect(after.statusCode).toBe(401);
      const posted = await postRecipients(app, c.campaign.id, auth, [{ to: phones(1)[0] }]);
      expect(posted.statusCode).toBe(401);
      const list = await runCli(['campaign', 'list', '--org', c.org.id, '--json'], app.env);
      expect(list.json()).toEqual([]);
      const left = await app.ctx.db
        .selectFrom('campaign_deliveries')
        .select('id')
        .where('campaign_id', '=', c.campaign.id)
        .execute();
      expect(left).toEqual([]);
      const audit = await runCli(['audit', 'list', '--org', c.org.id, '--json'], app.env);
      expect(audit.json<{ actor: string; action: string; targetId: string }[]>()).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ actor: 'cli', action: 'campaign.removed', targetId: c.campaign.id }),
        ]),
      );

      // The jobs already queued for it find nothing: no message goes out.
      app.ctx.jobs.start();
      await app.ctx.jobs.drained();
      const sent = await app.ctx.db.selectFrom('messages').select('id').where('agent_id', '=', c.agent.id).execute();
      expect(sent).toEqual([]);

      const again = await runCli(['campaign', 'remove', '--org', c.org.id, '--id', c.campaign.id], app.env);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/No campaign with ID/);
    } finally {
      await app.close();
    }
  });
});

/**
 * The refusals' wording and exit code: the lookups behind them are the repositories the tests above
 * run on both databases, so SQLite proves the point.
 */
describe('parley campaign: refusals (sqlite)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses what cannot be a campaign with a sentence and exit code 1', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const cli = (...args: string[]) => runCli(args, t.env);
    // Three processes at once: each is independent of the others.
    const [bad, unknown, missing] = await Promise.all([
      cli(
        ...['campaign', 'create', '--org', org.id, '--name', 'X', '--agent', agent.id, '--template', 't'],
        ...['--language', 'english'],
      ),
      cli(
        ...['campaign', 'create', '--org', org.id, '--name', 'X', '--agent', 'agt_nope', '--template', 't'],
        ...['--language', 'en_US'],
      ),
      cli('campaign', 'pause', '--org', org.id, '--id', 'cmp_nope'),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('parley: language must look like en_US (xx_XX), got "english"\n');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown agent "agt_nope"/);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No campaign with ID 'cmp_nope'/);
  });
});
