import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, listKeys } from '../../src/keys/key.service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';

const KEYS = '/dashboard/settings/integrations/api-keys';

/**
 * Campaigns belongs to campaign keys alone (the campaign routes admit only the key bound to that
 * campaign), so the service refuses it on any other key, and the CLI and the dashboard say so.
 * One dialect: the rule is checked before anything is read or written (SQLite proves it).
 */
describe('a key with Campaigns can only be a campaign key (sqlite)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the service refuses Campaigns on an organization or agent key with a sentence, and stores nothing', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const make = (scope: string, permissions: string[]) =>
      createKey(t.ctx.db, t.ctx.clock, 'us', {
        orgId: org.id,
        label: 'x',
        scope,
        permissions,
        ...(scope === 'agent' ? { agentId: agent.id } : {}),
      });
    await expect(make('organization', ['campaigns'])).rejects.toMatchObject({
      code: 'INVALID_BODY',
      message: expect.stringMatching(/^a whole-organization key cannot hold Campaigns: only a campaign key/),
    });
    await expect(make('organization', ['channels', 'campaigns'])).rejects.toMatchObject({ code: 'INVALID_BODY' });
    await expect(make('agent', ['campaigns'])).rejects.toMatchObject({
      message: expect.stringMatching(/^an agent-scoped key cannot hold Campaigns/),
    });
    expect(await listKeys(t.ctx.db, org.id)).toEqual([]);
  });

  it('`parley key create --scope organization|agent --permissions campaigns` exits 1 with the sentence on stderr', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const base = ['key', 'create', '--org', org.id, '--label', 'x', '--permissions', 'campaigns'];
    const [orgScope, agentScope] = await Promise.all([
      runCli([...base, '--scope', 'organization'], t.env),
      runCli([...base, '--scope', 'agent', '--agent', agent.id, '--json'], t.env),
    ]);
    expect(orgScope.code).toBe(1);
    expect(orgScope.stdout).toBe('');
    expect(orgScope.stderr).toMatch(
      /^parley: a whole-organization key cannot hold Campaigns: only a campaign key \(scope campaign, bound to one campaign\) can call a campaign's endpoints\n$/,
    );
    expect(agentScope.code).toBe(1);
    expect(agentScope.stderr).toMatch(/^parley: an agent-scoped key cannot hold Campaigns/);
    expect(await listKeys(t.ctx.db, org.id)).toEqual([]);
  });

  it('the dashboard form refuses a crafted Campaigns permission with the sentence in its dialog', async () => {
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id, 'admin');
    const browser = await signInAs(t.app, user.email);
    const res = await browser.post(KEYS, {
      _csrf: browser.csrf,
      label: 'crafted',
      scope: 'organization',
      permissions: ['channels', 'campaigns'],
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toMatch(/role="alert"[^>]*>A whole-organization key cannot hold Campaigns: only a campaign key/);
    expect(await listKeys(t.ctx.db, org.id)).toEqual([]);
  });
});
