import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, listKeys, revokeKey } from '../../src/keys/key.service.js';
import { generateKey, hashKey, parseKey } from '../../src/keys/key-format.js';
import { setOrganizationPlan } from '../../src/orgs/org.service.js';
import { ManualClock } from '../../src/shared/clock.js';
import { isAppError } from '../../src/shared/errors.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import { makeAgent, makeCampaign, makeKey, makeOrg } from '../helpers/factories.js';
import { createProbeApp, PROBE_CODED } from '../helpers/platform-probe.js';

/** A protected route (End-users permission) that exists whatever features are present. */
const PROBE = { method: 'GET' as const, url: PROBE_CODED };

/** Replaces one character of a key's secret, keeping it well-formed. */
function mutate(key: string, at = 10): string {
  const c = key[at] === 'a' ? 'b' : 'a';
  return key.slice(0, at) + c + key.slice(at + 1);
}

describe('key format', () => {
  it('is prl_<region>_ + 32 base62 + 6 base62 checksum, with at least 160 random bits', () => {
    for (const region of ['us', 'eu', 'in', 'qa'] as const) {
      const { key, prefix, hash } = generateKey(region);
      expect(key).toMatch(new RegExp(`^prl_${region}_[0-9A-Za-z]{38}$`));
      expect(prefix).toBe(key.slice(0, 11));
      expect(prefix.startsWith(`prl_${region}_`)).toBe(true);
      expect(hash).toBe(hashKey(key));
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      expect(parseKey(key)).toEqual({ ok: true, region });
    }
  });

  it('keeps at least 160 random bits out of the visible prefix', () => {
    const keys = Array.from({ length: 3000 }, () => generateKey('eu'));
    const sample = keys[0];
    if (!sample) throw new Error('no key');
    // What is never shown again: after the stored prefix, before the 6-character checksum.
    const hidden = (k: { key: string; prefix: string }) => k.key.slice(k.prefix.length, -6);
    const hiddenLength = hidden(sample).length;
    expect(hiddenLength * Math.log2(62)).toBeGreaterThanOrEqual(160);
    // Every hidden position really varies: across 3,000 keys each takes (nearly) all 62 values.
    for (let i = 0; i < hiddenLength; i++) {
      const seen = new Set(keys.map((k) => hidden(k)[i]));
      expect(seen.size, `position ${i}`).toBeGreaterThanOrEqual(60);
    }
  });

  it('never repeats', () => {
    const keys = new Set(Array.from({ length: 2000 }, () => generateKey('us').key));
    expect(keys.size).toBe(2000);
  });

  it('rejects a bad checksum, a typo, a truncation and a malformed key before any lookup', () => {
    const { key } = generateKey('us');
    expect(parseKey(mutate(key))).toEqual({ ok: false, reason: 'checksum' });
    expect(parseKey(mutate(key, key.length - 1))).toEqual({ ok: false, reason: 'checksum' });
    expect(parseKey(key.slice(0, -1))).toEqual({ ok: false, reason: 'malformed' });
    expect(parseKey(`${key}x`)).toEqual({ ok: false, reason: 'malformed' });
    expect(parseKey(key.replace('prl_', 'prk_'))).toEqual({ ok: false, reason: 'malformed' });
    expect(parseKey(key.replace('_us_', '_xx_'))).toEqual({ ok: false, reason: 'malformed' });
    expect(parseKey('')).toEqual({ ok: false, reason: 'malformed' });
    expect(parseKey('prl_us_!!!!')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('parses the region, and a key re-labelled with another region fails its checksum', () => {
    const eu = generateKey('eu').key;
    expect(parseKey(eu)).toEqual({ ok: true, region: 'eu' });
    expect(parseKey(eu.replace('prl_eu_', 'prl_us_'))).toEqual({ ok: false, reason: 'checksum' });
  });
});

describe.each(DIALECTS)('key lifecycle (%s)', (dialect) => {
  let t: TestApp;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await createProbeApp(dialect, { clock });
  });
  afterAll(async () => {
    await t.close();
  });

  it('stores only the SHA-256 and the visible prefix, never the key', async () => {
    const org = await makeOrg(t.ctx);
    const { apiKey, key } = await createKey(t.ctx.db, t.ctx.clock, 'us', {
      orgId: org.id,
      label: 'ci',
      scope: 'organization',
      permissions: ['channels', 'endusers'],
    });
    const row = await t.ctx.db.selectFrom('api_keys').selectAll().where('id', '=', apiKey.id).executeTakeFirstOrThrow();
    expect(row.hash).toBe(hashKey(key));
    expect(row.prefix).toBe(key.slice(0, 11));
    const secret = key.slice(7);
    for (const value of Object.values(row)) {
      if (typeof value !== 'string') continue;
      expect(value.includes(key)).toBe(false);
      expect(value.includes(secret)).toBe(false);
      expect(value.includes(secret.slice(6, 30))).toBe(false);
    }
    expect(JSON.stringify(apiKey)).not.toContain(secret);
  });

  it('creates keys of each scope with their permissions, and lists them', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const campaign = await makeCampaign(t.ctx, org.id);
    const orgKey = await makeKey(t.ctx, org.id, { permissions: ['triggers', 'channels', 'endusers'] });
    clock.advance(1000);
    const agentKey = await makeKey(t.ctx, org.id, {
      scope: 'agent',
      agentId: agent.id,
      permissions: ['channels', 'triggers'],
    });
    clock.advance(1000);
    const campaignKey = await makeKey(t.ctx, org.id, { scope: 'campaign', campaignId: campaign.id });
    expect(campaignKey.permissions).toEqual(['campaigns']);

    const keys = await listKeys(t.ctx.db, org.id);
    expect(keys.map((k) => k.id)).toEqual([campaignKey.id, agentKey.id, orgKey.id]);
    expect(keys[2]).toEqual({
      id: orgKey.id,
      orgId: org.id,
      label: orgKey.label,
      prefix: orgKey.prefix,
      scope: 'organization',
      agentId: null,
      campaignId: null,
      permissions: ['triggers', 'channels', 'endusers'],
      createdAt: clock.now() - 2000,
      lastUsedAt: null,
      revokedAt: null,
    });
    expect(keys[1]).toMatchObject({ scope: 'agent', agentId: agent.id, permissions: ['triggers', 'channels'] });
    expect(keys[0]).toMatchObject({ scope: 'campaign', campaignId: campaign.id, agentId: null });
    for (const k of keys) expect(Object.keys(k)).not.toContain('hash');
  });

  it('refuses invalid keys with clear messages', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const other = await makeOrg(t.ctx);
    const otherAgent = await makeAgent(t.ctx, other.id);
    const attempt = async (input: Parameters<typeof createKey>[3]) => {
      try {
        await createKey(t.ctx.db, t.ctx.clock, 'us', input);
      } catch (err) {
        if (isAppError(err)) return `${err.code}: ${err.message}`;
        throw err;
      }
      return 'created';
    };
    const base = { orgId: org.id, label: 'x' };
    expect(await attempt({ ...base, scope: 'agent', agentId: agent.id, permissions: ['endusers'] })).toMatch(
      /INVALID_BODY: an agent-scoped key cannot hold End-users/,
    );
    expect(await attempt({ ...base, scope: 'organization', permissions: [] })).toMatch(/at least one permission/);
    expect(await attempt({ ...base, scope: 'organization', permissions: ['admin'] })).toMatch(
      /unknown permission "admin"/,
    );
    expect(await attempt({ ...base, scope: 'team', permissions: ['channels'] })).toMatch(/scope must be/);
    expect(await attempt({ ...base, scope: 'agent', permissions: ['channels'] })).toMatch(/needs an agent/);
    expect(await attempt({ ...base, scope: 'agent', agentId: otherAgent.id, permissions: ['channels'] })).toMatch(
      /NOT_FOUND: unknown agent/,
    );
    expect(await attempt({ ...base, scope: 'campaign', campaignId: 'cmp_nope' })).toMatch(/unknown campaign/);
    expect(await attempt({ ...base, scope: 'campaign', permissions: ['channels'] })).toMatch(/Campaigns only/);
    expect(await attempt({ ...base, label: ' ', scope: 'organization', permissions: ['channels'] })).toMatch(
      /needs a label/,
    );
    expect(await attempt({ orgId: 'org_nope', label: 'x', scope: 'organization', permissions: ['channels'] })).toMatch(
      /NOT_FOUND: unknown organization/,
    );
  });

  it('last used: null until the first successful call, set at once by it, then buffered until a flush', async () => {
    const org = await makeOrg(t.ctx);
    const key = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const lastUsed = async () =>
      (await t.ctx.db.selectFrom('api_keys').select('last_used_at').where('id', '=', key.id).executeTakeFirstOrThrow())
        .last_used_at;
    expect(await lastUsed()).toBeNull();

    // A failing call (lacking permission) is not a use.
    const noPerm = await makeKey(t.ctx, org.id, { permissions: ['channels'] });
    await t.app.inject({ ...PROBE, headers: noPerm.auth });
    expect((await listKeys(t.ctx.db, org.id)).find((k) => k.id === noPerm.id)?.lastUsedAt).toBeNull();

    clock.advance(5000);
    const first = clock.now();
    const res = await t.app.inject({ ...PROBE, headers: key.auth });
    expect([401, 403]).not.toContain(res.statusCode);
    expect(await lastUsed()).toBe(first);

    clock.advance(60_000);
    const later = clock.now();
    await t.app.inject({ ...PROBE, headers: key.auth });
    await t.app.inject({ ...PROBE, headers: key.auth });
    // Not written on every request...
    expect(await lastUsed()).toBe(first);
    // ...but correct after the flush.
    await t.ctx.lastUsed.flush();
    expect(await lastUsed()).toBe(later);
    expect((await listKeys(t.ctx.db, org.id)).find((k) => k.id === key.id)?.lastUsedAt).toBe(later);
  });

  it('revoke: the next request gets 401, and revoking again keeps the first revocation', async () => {
    const org = await makeOrg(t.ctx);
    const key = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const before = await t.app.inject({ ...PROBE, headers: key.auth });
    expect([401, 403]).not.toContain(before.statusCode);

    const revokedAt = clock.now();
    const revoked = await revokeKey(t.ctx.db, t.ctx.clock, org.id, key.id);
    expect(revoked.revokedAt).toBe(revokedAt);
    const after = await t.app.inject({ ...PROBE, headers: key.auth });
    expect(after.statusCode).toBe(401);
    expect(after.json()).toEqual({ error: 'This API key has been revoked.', code: 'UNAUTHORIZED' });

    clock.advance(1000);
    const again = await revokeKey(t.ctx.db, t.ctx.clock, org.id, key.id);
    expect(again.revokedAt).toBe(revokedAt);
    expect((await t.app.inject({ ...PROBE, headers: key.auth })).statusCode).toBe(401);
    // No un-revoke path: the service exposes none, and the plan switch does not bring it back.
    await setOrganizationPlan(t.ctx.db, org.id, 'free');
    await setOrganizationPlan(t.ctx.db, org.id, 'paid');
    expect((await t.app.inject({ ...PROBE, headers: key.auth })).statusCode).toBe(401);
  });

  it('revoke needs the right organization and a known key', async () => {
    const org = await makeOrg(t.ctx);
    const other = await makeOrg(t.ctx);
    const key = await makeKey(t.ctx, org.id);
    await expect(revokeKey(t.ctx.db, t.ctx.clock, other.id, key.id)).rejects.toThrow(/unknown key/);
    await expect(revokeKey(t.ctx.db, t.ctx.clock, org.id, 'key_nope')).rejects.toThrow(/unknown key/);
    expect((await t.app.inject({ ...PROBE, headers: key.auth })).statusCode).not.toBe(401);
  });

  it('free plan: no new keys; existing keys get 403 until the organization is paid again', async () => {
    const free = await makeOrg(t.ctx, 'free');
    await expect(
      createKey(t.ctx.db, t.ctx.clock, 'us', {
        orgId: free.id,
        label: 'x',
        scope: 'organization',
        permissions: ['channels'],
      }),
    ).rejects.toThrow('API access requires a paid plan');

    const org = await makeOrg(t.ctx);
    const key = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    await setOrganizationPlan(t.ctx.db, org.id, 'free');
    const denied = await t.app.inject({ ...PROBE, headers: key.auth });
    expect(denied.statusCode).toBe(403);
    expect(denied.json()).toEqual({ error: 'API access requires a paid plan', code: 'FORBIDDEN' });
    await expect(
      createKey(t.ctx.db, t.ctx.clock, 'us', {
        orgId: org.id,
        label: 'y',
        scope: 'organization',
        permissions: ['channels'],
      }),
    ).rejects.toThrow('API access requires a paid plan');

    await setOrganizationPlan(t.ctx.db, org.id, 'paid');
    const allowed = await t.app.inject({ ...PROBE, headers: key.auth });
    expect([401, 403]).not.toContain(allowed.statusCode);
  });
});
