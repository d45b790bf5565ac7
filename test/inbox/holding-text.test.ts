import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAgent, setHoldingText } from '../../src/agents/agent.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';

describe.each(DIALECTS)("an agent's holding text (%s)", (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  // The command once (its SQL is the page's, run below on both databases).
  it.runIf(dialect === 'sqlite')(
    "parley agent update --holding-text sets it; another organization's agent is not found",
    async () => {
      const org = await makeOrg(t.ctx);
      const agent = await makeAgent(t.ctx, org.id);
      const set = await runCli(
        [
          'agent',
          'update',
          '--org',
          org.id,
          '--id',
          agent.id,
          '--holding-text',
          'A person will answer shortly.',
          '--json',
        ],
        t.env,
      );
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toEqual({ id: agent.id, name: agent.name, holdingText: 'A person will answer shortly.' });
      expect((await findAgent(t.ctx.db, org.id, agent.id))?.holdingText).toBe('A person will answer shortly.');
      const other = await makeOrg(t.ctx);
      await expect(setHoldingText(t.ctx.db, other.id, agent.id, 'x')).rejects.toThrow(`No agent '${agent.id}'`);
      expect((await findAgent(t.ctx.db, org.id, agent.id))?.holdingText).toBe('A person will answer shortly.');
    },
  );

  it("owners and admins set it on the agent's page; members only read it; too long is refused", async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const owner = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'owner')).email);
    const member = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'member')).email);
    const page = await owner.get(`/dashboard/agents/${agent.id}`);
    expect(page.body).toContain('<label for="holding-text">Holding text</label>');
    const saved = await owner.post(`/dashboard/agents/${agent.id}/holding-text`, {
      _csrf: owner.csrf,
      holdingText: 'Thanks! Someone will be with you.',
    });
    expect(saved.statusCode).toBe(303);
    expect((await findAgent(t.ctx.db, org.id, agent.id))?.holdingText).toBe('Thanks! Someone will be with you.');
    const shown = await member.get(`/dashboard/agents/${agent.id}`);
    expect(shown.body).toContain('Holding text: Thanks! Someone will be with you.');
    expect(shown.body).not.toContain('<label for="holding-text">');
    const denied = await member.post(`/dashboard/agents/${agent.id}/holding-text`, {
      _csrf: member.csrf,
      holdingText: 'mine',
    });
    expect(denied.statusCode).toBe(403);
    const long = await owner.post(`/dashboard/agents/${agent.id}/holding-text`, {
      _csrf: owner.csrf,
      holdingText: 'x'.repeat(1001),
    });
    expect(long.statusCode).toBe(400);
    expect(long.body).toContain('at most 1000 characters');
    const cleared = await owner.post(`/dashboard/agents/${agent.id}/holding-text`, {
      _csrf: owner.csrf,
      holdingText: '',
    });
    expect(cleared.statusCode).toBe(303);
    expect((await findAgent(t.ctx.db, org.id, agent.id))?.holdingText).toBeNull();
  });
});
