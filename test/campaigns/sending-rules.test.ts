import { describe, expect, it } from 'vitest';
import { quietUntil } from '../../src/sending-rules/quiet-hours.js';
import { DIALECTS } from '../helpers/app.js';
import { makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { call } from '../helpers/http.js';
import { createMessagingApp } from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

describe('quiet hours in a time zone', () => {
  const lisbon = { start: '21:00', end: '08:00', timeZone: 'Europe/Lisbon' };
  it('hold until their end, across midnight and daylight saving; outside them nothing waits', () => {
    // Summer: Lisbon is UTC+1, 23:30 there → 08:00 there is 07:00 UTC.
    expect(quietUntil(lisbon, Date.parse('2026-07-01T22:30:15Z'))).toBe(Date.parse('2026-07-02T07:00:00Z'));
    // Winter: UTC+0, 21:30 → 08:00 next day.
    expect(quietUntil(lisbon, Date.parse('2026-01-10T21:30:00Z'))).toBe(Date.parse('2026-01-11T08:00:00Z'));
    expect(quietUntil(lisbon, Date.parse('2026-01-11T07:59:00Z'))).toBe(Date.parse('2026-01-11T08:00:00Z'));
    expect(quietUntil(lisbon, Date.parse('2026-01-11T08:00:00Z'))).toBeUndefined();
    expect(quietUntil(lisbon, Date.parse('2026-01-10T12:00:00Z'))).toBeUndefined();
    const lunch = { start: '12:00', end: '13:30', timeZone: 'America/New_York' };
    expect(quietUntil(lunch, Date.parse('2026-03-02T17:10:00Z'))).toBe(Date.parse('2026-03-02T18:30:00Z'));
  });
});

describe.each(DIALECTS)('sending rules (%s)', (dialect) => {
  it('org update sets them; quiet hours hold a campaign delivery back; the marketing cap stops one with frequency_cap', async () => {
    const t = await createMessagingApp(dialect);
    try {
      // Off until set: two deliveries to one phone both go.
      const free = await makeCampaignTenant(t.ctx);
      const [twice] = phones(1);
      await postRecipients(t, free.campaign.id, free.campaignKey.auth, [{ to: twice }, { to: twice }]);
      await until(async () => (await sandboxLog(t, free.orgKey.auth, { to: twice })).length === 2, 'both sent');

      // The cap: one marketing template a day.
      const capped = await makeCampaignTenant(t.ctx);
      const refused = await runCli(['org', 'update', '--org', capped.org.id, '--marketing-cap', 'two'], t.env);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('--marketing-cap must be a whole number or off');
      const set = await runCli(['org', 'update', '--org', capped.org.id, '--marketing-cap', '1', '--json'], t.env);
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout)).toEqual({ id: capped.org.id, quietHours: null, marketingCap: 1 });
      const [to] = phones(1);
      const first = await postRecipients(t, capped.campaign.id, capped.campaignKey.auth, [{ to }]);
      await until(async () => (await sandboxLog(t, capped.orgKey.auth, { to })).length === 1, 'the first sent');
      await until(async () => {
        const d = await call(t, {
          method: 'GET',
          url: `/api/campaigns/${capped.campaign.id}/deliveries`,
          headers: capped.campaignKey.auth,
        });
        return d
          .json()
          .data.some(
            (x: { id: string; status: string }) =>
              x.id === first.json().results[0].deliveryId && x.status !== 'sending',
          );
      }, 'the first accepted');
      const second = await postRecipients(t, capped.campaign.id, capped.campaignKey.auth, [{ to }]);
      const secondId = second.json().results[0].deliveryId;
      await until(async () => {
        const d = await call(t, {
          method: 'GET',
          url: `/api/campaigns/${capped.campaign.id}/deliveries?status=failed`,
          headers: capped.campaignKey.auth,
        });
        return d.json().data.some((x: { id: string }) => x.id === secondId);
      }, 'the second failed');
      const failed = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${capped.campaign.id}/deliveries?status=failed`,
        headers: capped.campaignKey.auth,
      });
      expect(failed.json().data).toEqual([
        expect.objectContaining({ id: secondId, status: 'failed', error: 'frequency_cap' }),
      ]);
      expect(await sandboxLog(t, capped.orgKey.auth, { to })).toHaveLength(1);

      // Quiet hours around now (UTC): the delivery waits until they end, nothing reaches the provider.
      const quiet = await makeCampaignTenant(t.ctx);
      const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
      const now = Date.now();
      const window = `${hhmm(now - 3_600_000)}-${hhmm(now + 3_600_000)}`;
      const badZone = await runCli(
        ['org', 'update', '--org', quiet.org.id, '--quiet-hours', window, '--time-zone', 'Mars/Olympus'],
        t.env,
      );
      expect(badZone.stderr).toContain('"Mars/Olympus" is not a time zone');
      const noZone = await runCli(['org', 'update', '--org', quiet.org.id, '--quiet-hours', window], t.env);
      expect(noZone.stderr).toContain('Quiet hours need a time zone');
      const ok = await runCli(
        ['org', 'update', '--org', quiet.org.id, '--quiet-hours', window, '--time-zone', 'UTC'],
        t.env,
      );
      expect(ok.stdout).toContain(`quiet hours ${window} UTC, no marketing cap`);
      const [held] = phones(1);
      const post = await postRecipients(t, quiet.campaign.id, quiet.campaignKey.auth, [{ to: held }]);
      const heldId = post.json().results[0].deliveryId;
      let heldUntil = 0;
      await until(async () => {
        const row = await t.ctx.db
          .selectFrom('campaign_deliveries')
          .select(['held_until', 'state'])
          .where('id', '=', heldId)
          .executeTakeFirst();
        heldUntil = Number(row?.held_until ?? 0);
        return heldUntil > 0;
      }, 'the delivery held');
      const end = Date.parse(`${new Date(now + 3_600_000).toISOString().slice(0, 16)}:00Z`);
      expect(heldUntil).toBe(end);
      const d = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${quiet.campaign.id}/deliveries`,
        headers: quiet.campaignKey.auth,
      });
      expect(d.json().data).toEqual([expect.objectContaining({ id: heldId, status: 'queued' })]);
      expect(await sandboxLog(t, quiet.orgKey.auth, { to: held })).toEqual([]);
    } finally {
      await t.close();
    }
  }, 120_000);

  it('the dashboard settings page shows and changes them; a member only looks', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const c = await makeCampaignTenant(t.ctx);
      const owner = await signInAs(t.app, (await makeUser(t.ctx, c.org.id, 'owner')).email);
      const page = await owner.get('/dashboard/settings/sending');
      expect(page.body).toContain('Now: no quiet hours; no marketing cap.');
      const bad = await owner.post('/dashboard/settings/sending', {
        _csrf: owner.csrf,
        quietHours: '9pm-8am',
        timeZone: 'Europe/Lisbon',
        marketingCap: '',
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toContain('Quiet hours must be written HH:MM-HH:MM');
      const saved = await owner.post('/dashboard/settings/sending', {
        _csrf: owner.csrf,
        quietHours: '21:00-8:00',
        timeZone: 'Europe/Lisbon',
        marketingCap: '2',
      });
      expect(saved.statusCode).toBe(303);
      const after = await owner.get('/dashboard/settings/sending?saved=1');
      expect(after.body).toContain(
        'Now: quiet hours 21:00–08:00 (Europe/Lisbon); at most 2 marketing templates a day per end user.',
      );
      const member = await signInAs(t.app, (await makeUser(t.ctx, c.org.id, 'member')).email);
      expect((await member.get('/dashboard/settings/sending')).body).not.toContain(
        '<button type="submit">Save</button>',
      );
      expect(
        (await member.post('/dashboard/settings/sending', { _csrf: member.csrf, marketingCap: '' })).statusCode,
      ).toBe(403);
    } finally {
      await t.close();
    }
  }, 60_000);
});
