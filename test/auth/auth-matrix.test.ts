/**
 * The shared auth suite: every protected route, through the real app, against every way a key can
 * be wrong (missing, not Bearer, malformed, bad checksum, other region, unknown, revoked, free plan)
 * and every scope × permission, own vs other organization, own vs other agent.
 *
 * Routes are listed in ROUTES. A feature route that is not registered (yet) is skipped with a note;
 * the probe routes (test/helpers/platform-probe.ts) always run, so the auth module is covered alone.
 * "Allowed" means the auth layer let the request through: anything but 401/403 (and not a 5xx), with a
 * body that matches the route's OpenAPI entry.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../src/keys/key.service.js';
import { generateKey } from '../../src/keys/key-format.js';
import { PERMISSIONS, type Permission, type Scope, serializePermissions } from '../../src/keys/permissions.js';
import { addNumber, assignNumber } from '../../src/numbers/number.service.js';
import { setOrganizationPlan } from '../../src/orgs/org.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { contractViolation } from '../helpers/contract.js';
import { makeAgent, makeCampaign, makeKey, makeOrg } from '../helpers/factories.js';
import { randomPhone } from '../helpers/messaging.js';
import {
  createProbeApp,
  PROBE_AGENT,
  PROBE_AGENT_PATH,
  PROBE_CHANNEL,
  PROBE_CODED,
} from '../helpers/platform-probe.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
type Family = 'channel' | 'coded';

/** What the tests know when they build a request. */
interface Fixture {
  /** An end user of the caller's organization, when the route exists (else a made-up ID). */
  ownEndUserId: string;
  /** An end user of another organization. */
  otherEndUserId: string | null;
  /** A message sent by another agent of the caller's organization (made-up ID when sends fail). */
  ownMessageId: string;
  /** A message of another organization. */
  otherMessageId: string | null;
  /** The conversation of the own message (another agent's). */
  ownConversationId: string;
  /** The conversation of the other organization's message. */
  otherConversationId: string | null;
  /** The campaign the campaign key is bound to. */
  campaignId: string;
}

/**
 * Which record a by-ID route is aimed at: `own` (reachable by every key that may call the route; may
 * be a made-up ID), `own-record` (a real record of the caller's organization), `other-org`.
 */
type Target = 'own' | 'own-record' | 'other-org';

interface RouteCase {
  method: Method;
  /** Route path as documented (OpenAPI template). */
  path: string;
  url: (f: Fixture, target: Target, agentId: string) => string;
  /** The permission the route needs, or the permissions of which any one will do. */
  permission: Permission | Permission[];
  family: Family;
  /** How the target agent is given: `convId` in the body, its ID in the path, or not at all. */
  agentTargeted: 'body' | 'path' | 'none';
  /** A minimal valid body (convId is added for agent-targeted routes). */
  body?: () => Record<string, unknown>;
  /** Whether the route takes an organization resource by ID in its path (own vs other organization). */
  resourceInPath?: boolean;
  /** Whether the resource in the path belongs to one agent (agent keys see only their own agent's). */
  agentOwnedResource?: boolean;
  /** Whether the route accepts only organization keys (End-users). */
  organizationOnly?: boolean;
  /** Whether the route accepts only the key bound to the campaign of its path (campaign endpoints). */
  campaignOnly?: boolean;
  /** Probe routes exist in every build. */
  probe?: boolean;
  /** A route of the spec that is not built yet: its cases are skipped until it is. */
  notBuiltYet?: boolean;
}

const email = () => `m-${randomBase62(10).toLowerCase()}@example.com`;
const fakeId = (kind: string) => `${kind}_${randomBase62(22)}`;

const ROUTES: RouteCase[] = [
  {
    method: 'GET',
    path: '/api/endusers',
    url: () => '/api/endusers',
    permission: 'endusers',
    family: 'coded',
    agentTargeted: 'none',
    organizationOnly: true,
  },
  {
    method: 'POST',
    path: '/api/endusers',
    url: () => '/api/endusers',
    permission: 'endusers',
    family: 'coded',
    agentTargeted: 'none',
    organizationOnly: true,
    body: () => ({ origin: 'manual', name: 'Matrix', email: email() }),
  },
  {
    method: 'POST',
    path: '/api/endusers/batch',
    url: () => '/api/endusers/batch',
    permission: 'endusers',
    family: 'coded',
    agentTargeted: 'none',
    organizationOnly: true,
    body: () => ({ origin: 'imported', endUsers: [{ name: 'Matrix', email: email() }] }),
  },
  ...(['GET', 'PATCH', 'DELETE'] as const).map(
    (method): RouteCase => ({
      method,
      path: '/api/endusers/{endUserId}',
      url: (f, target) => {
        if (target === 'own') return `/api/endusers/${fakeId('eu')}`;
        return `/api/endusers/${target === 'own-record' ? f.ownEndUserId : (f.otherEndUserId ?? fakeId('eu'))}`;
      },
      permission: 'endusers',
      family: 'coded',
      agentTargeted: 'none',
      organizationOnly: true,
      resourceInPath: true,
      ...(method === 'PATCH' ? { body: () => ({ name: 'Patched' }) } : {}),
    }),
  ),
  {
    method: 'POST',
    path: '/api/campaigns/{campaignId}/webhook',
    url: (f) => `/api/campaigns/${f.campaignId}/webhook`,
    permission: 'campaigns',
    family: 'channel',
    agentTargeted: 'none',
    campaignOnly: true,
    body: () => ({ recipients: [{ to: '+14155550100' }] }),
  },
  ...(['/api/campaigns/{campaignId}', '/api/campaigns/{campaignId}/deliveries'] as const).map(
    (path): RouteCase => ({
      method: 'GET',
      path,
      url: (f) => path.replace('{campaignId}', f.campaignId),
      permission: 'campaigns',
      family: 'channel',
      agentTargeted: 'none',
      campaignOnly: true,
    }),
  ),
  {
    method: 'POST',
    path: '/api/channels/send',
    url: () => '/api/channels/send',
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'body',
    body: () => ({
      channel: 'msgapp',
      to: '+14155550100',
      type: 'template',
      template: { name: 'hello_world', language: 'en_US' },
    }),
  },
  {
    method: 'POST',
    path: '/api/channels/send/check',
    url: () => '/api/channels/send/check',
    permission: 'channels',
    family: 'channel',
    // An unknown agent is its `agent` rule (200), not a 404: its agents are tested in test/policies/send-check.test.ts.
    agentTargeted: 'none',
    body: () => ({
      channel: 'msgapp',
      to: '+14155550100',
      type: 'template',
      template: { name: 'hello_world', language: 'en_US' },
    }),
  },
  {
    method: 'POST',
    path: '/api/campaigns/{campaignId}/webhook/check',
    url: (f) => `/api/campaigns/${f.campaignId}/webhook/check`,
    permission: 'campaigns',
    family: 'channel',
    agentTargeted: 'none',
    campaignOnly: true,
    body: () => ({ recipients: [{ to: '+14155550100' }] }),
  },
  {
    method: 'GET',
    path: '/api/templates',
    url: () => '/api/templates',
    permission: ['channels', 'triggers'],
    family: 'channel',
    agentTargeted: 'none',
  },
  {
    method: 'GET',
    path: '/api/messages/{messageId}',
    url: (f, target) => {
      if (target === 'own') return `/api/messages/${fakeId('wamid')}`;
      return `/api/messages/${target === 'own-record' ? f.ownMessageId : (f.otherMessageId ?? fakeId('wamid'))}`;
    },
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'none',
    resourceInPath: true,
    agentOwnedResource: true,
  },
  {
    method: 'POST',
    path: '/api/sandbox/inbound',
    url: () => '/api/sandbox/inbound',
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'body',
    body: () => ({ from: '+14155550123', text: 'hello' }),
  },
  {
    method: 'GET',
    path: '/api/sandbox/messages',
    url: () => '/api/sandbox/messages',
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'none',
  },
  {
    // Own and other organizations' and agents' files: test/media/inbound-media.test.ts.
    method: 'GET',
    path: '/api/media/{mediaId}',
    url: () => `/api/media/${fakeId('med')}`,
    permission: ['channels', 'triggers'],
    family: 'channel',
    agentTargeted: 'none',
  },
  {
    // Own, other agents' and sent messages: test/messaging/read-receipts.test.ts.
    method: 'POST',
    path: '/api/messages/{messageId}/read',
    url: () => `/api/messages/${fakeId('wamid')}/read`,
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'none',
    body: () => ({}),
  },
  {
    // Uploads that pass and fail, and who may send them: test/media/upload.test.ts.
    method: 'POST',
    path: '/api/media',
    url: () => '/api/media',
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'none',
    body: () => ({}),
  },
  {
    // Spec 4.2; its body is not specified, so an empty object.
    method: 'POST',
    path: '/api/triggers/{agentId}/{triggerId}',
    url: (_f, _t, agentId) => `/api/triggers/${agentId}/${fakeId('trg')}`,
    permission: 'triggers',
    family: 'channel',
    agentTargeted: 'path',
    body: () => ({}),
  },
  {
    method: 'GET',
    path: '/api/conversations',
    url: () => '/api/conversations',
    permission: ['channels', 'triggers'],
    family: 'channel',
    agentTargeted: 'none',
  },
  ...(
    [
      'GET /api/conversations/{conversationId}',
      'GET /api/conversations/{conversationId}/messages',
      'POST /api/conversations/{conversationId}/close',
    ] as const
  ).map((route): RouteCase => {
    const [method, path] = route.split(' ') as [Method, string];
    return {
      method,
      path,
      url: (f, target) => {
        const id =
          target === 'own'
            ? fakeId('cnv')
            : target === 'own-record'
              ? f.ownConversationId
              : (f.otherConversationId ?? fakeId('cnv'));
        return path.replace('{conversationId}', id);
      },
      permission: ['channels', 'triggers'],
      family: 'channel',
      agentTargeted: 'none',
      resourceInPath: true,
      agentOwnedResource: true,
    };
  }),
  {
    method: 'POST',
    path: PROBE_CODED,
    url: () => PROBE_CODED,
    permission: 'endusers',
    family: 'coded',
    agentTargeted: 'none',
    body: () => ({ n: 1 }),
    probe: true,
  },
  {
    method: 'POST',
    path: PROBE_CHANNEL,
    url: () => PROBE_CHANNEL,
    permission: 'channels',
    family: 'channel',
    agentTargeted: 'body',
    body: () => ({ n: 1 }),
    probe: true,
  },
  {
    method: 'POST',
    path: PROBE_AGENT,
    url: () => PROBE_AGENT,
    permission: 'triggers',
    family: 'channel',
    agentTargeted: 'body',
    body: () => ({ n: 1 }),
    probe: true,
  },
  {
    method: 'POST',
    path: PROBE_AGENT_PATH.replace(':agentId', '{agentId}'),
    url: (_f, _t, agentId) => PROBE_AGENT_PATH.replace(':agentId', agentId),
    permission: 'triggers',
    family: 'channel',
    agentTargeted: 'path',
    body: () => ({ n: 1 }),
    probe: true,
  },
];

/** Which feature routes the app registers: a route that is missing answers 404 "No route ...". */
async function registeredRoutes(): Promise<Set<string>> {
  const t = await createTestApp('sqlite');
  try {
    const present = new Set<string>();
    const f: Fixture = {
      ownEndUserId: fakeId('eu'),
      otherEndUserId: null,
      ownMessageId: fakeId('wamid'),
      otherMessageId: null,
      ownConversationId: fakeId('cnv'),
      otherConversationId: null,
      campaignId: fakeId('cmp'),
    };
    for (const r of ROUTES) {
      if (r.probe) continue;
      const res = await t.app.inject({ method: r.method, url: r.url(f, 'own', fakeId('agt')) });
      const missing = res.statusCode === 404 && /^No route/.test(String(res.json().error ?? ''));
      if (!missing) present.add(`${r.method} ${r.path}`);
    }
    return present;
  } finally {
    await t.close();
  }
}

const PRESENT = await registeredRoutes();
const label = (r: RouteCase) => `${r.method} ${r.path}`;
const isPresent = (r: RouteCase) => r.probe === true || PRESENT.has(label(r));
const MISSING = ROUTES.filter((r) => !isPresent(r)).map(label);

describe('the routes of the auth matrix', () => {
  it('are all registered, but for the ones marked as not built yet (which must really be absent)', () => {
    expect(MISSING).toEqual(ROUTES.filter((r) => r.notBuiltYet).map(label));
  });
});

/** Keys of each kind, by name. */
interface Keys {
  [name: string]: { key: string; scope: Scope; permissions: Permission[] };
}

function expectEnvelope(res: LightMyRequestResponse, family: Family, status: 401 | 403, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json();
  if (family === 'channel') {
    expect(body).toEqual({ success: false, error: expect.any(String) });
  } else {
    expect(body).toMatchObject({ error: expect.any(String), code });
    expect(Object.keys(body).sort()).toEqual(['code', 'error']);
  }
  expect(String(body.error).length).toBeGreaterThan(5);
  expect(res.headers['cache-control']).toBe('no-store');
}

/** Let through by the auth layer; whatever the route answered then is what its OpenAPI entry says. */
function expectAllowed(app: FastifyInstance, r: RouteCase, res: LightMyRequestResponse) {
  expect([401, 403], `expected the auth layer to let it through, got ${res.statusCode} ${res.body}`).not.toContain(
    res.statusCode,
  );
  expect(res.statusCode).toBeLessThan(500);
  expect(contractViolation(app, r.method, r.path, res)).toBeNull();
}

describe.each(DIALECTS)('auth matrix (%s)', (dialect) => {
  let t: TestApp;
  let fixture: Fixture;
  const keys: Keys = {};
  let ownAgent: string;
  let siblingAgent: string;
  let otherOrgAgent: string;
  let otherOrgKey: string;
  const messageFixtureProblems: string[] = [];

  beforeAll(async () => {
    t = await createProbeApp(dialect);
    const ctx = t.ctx;
    const org = await makeOrg(ctx);
    const other = await makeOrg(ctx);
    ownAgent = (await makeAgent(ctx, org.id)).id;
    siblingAgent = (await makeAgent(ctx, org.id)).id;
    otherOrgAgent = (await makeAgent(ctx, other.id)).id;
    const campaign = await makeCampaign(ctx, org.id);
    const all: Permission[] = ['triggers', 'channels', 'endusers'];
    const put = async (name: string, scope: Scope, permissions: Permission[]) => {
      // Campaigns can no longer be given to an organization or agent key; such keys made before that
      // rule may still exist, so they are forced into the table to check that the routes refuse them.
      const forced = scope !== 'campaign' && permissions.includes('campaigns');
      const allowed = permissions.filter((p) => p !== 'campaigns');
      const k = await makeKey(ctx, org.id, {
        scope,
        permissions: forced ? (allowed.length > 0 ? allowed : ['channels']) : permissions,
        ...(scope === 'agent' ? { agentId: ownAgent } : {}),
        ...(scope === 'campaign' ? { campaignId: campaign.id } : {}),
      });
      if (forced) {
        await ctx.db
          .updateTable('api_keys')
          .set({ permissions: serializePermissions(permissions) })
          .where('id', '=', k.id)
          .execute();
      }
      keys[name] = { key: k.key, scope, permissions };
    };
    for (const p of PERMISSIONS) await put(`organization:${p}`, 'organization', [p]);
    for (const p of PERMISSIONS.filter((p) => p !== 'endusers')) await put(`agent:${p}`, 'agent', [p]);
    await put('campaign:campaigns', 'campaign', ['campaigns']);
    await put('organization:all', 'organization', all);
    await put('agent:all', 'agent', ['triggers', 'channels', 'campaigns']);

    // An agent key holding End-users cannot be created; force one into the table to check that the
    // End-users routes still refuse it (defence in depth).
    const forced = await makeKey(ctx, org.id, { scope: 'agent', agentId: ownAgent, permissions: ['channels'] });
    await ctx.db
      .updateTable('api_keys')
      .set({ permissions: 'channels,endusers' })
      .where('id', '=', forced.id)
      .execute();
    keys['agent:forced-endusers'] = { key: forced.key, scope: 'agent', permissions: ['channels', 'endusers'] };

    const revoked = await makeKey(ctx, org.id, { permissions: all });
    await revokeKey(ctx.db, ctx.clock, org.id, revoked.id);
    keys.revoked = { key: revoked.key, scope: 'organization', permissions: all };

    const eu = await createKey(ctx.db, ctx.clock, 'eu', {
      orgId: org.id,
      label: 'eu',
      scope: 'organization',
      permissions: all,
    });
    keys.otherRegion = { key: eu.key, scope: 'organization', permissions: all };

    const freeOrg = await makeOrg(ctx);
    const freeAgent = await makeAgent(ctx, freeOrg.id);
    const freeKey = await makeKey(ctx, freeOrg.id, { permissions: all });
    const freeAgentKey = await makeKey(ctx, freeOrg.id, {
      scope: 'agent',
      agentId: freeAgent.id,
      permissions: ['channels', 'triggers'],
    });
    await setOrganizationPlan(ctx.db, freeOrg.id, 'free');
    keys.free = { key: freeKey.key, scope: 'organization', permissions: all };
    keys.freeAgent = { key: freeAgentKey.key, scope: 'agent', permissions: ['channels', 'triggers'] };

    const otherKey = await makeKey(ctx, other.id, { permissions: all });
    otherOrgKey = otherKey.key;
    fixture = {
      ownEndUserId: fakeId('eu'),
      otherEndUserId: null,
      ownMessageId: fakeId('wamid'),
      otherMessageId: null,
      ownConversationId: fakeId('cnv'),
      otherConversationId: null,
      campaignId: campaign.id,
    };
    if (PRESENT.has('POST /api/endusers')) {
      const mk = async (auth: Record<string, string>) => {
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/endusers',
          headers: auth,
          payload: { origin: 'manual', name: 'Fixture', email: email() },
        });
        expect(res.statusCode, res.body).toBe(201);
        return String(res.json()._id);
      };
      fixture.ownEndUserId = await mk({ authorization: `Bearer ${keys['organization:all']?.key}` });
      fixture.otherEndUserId = await mk(otherKey.auth);
    }
    if (PRESENT.has('POST /api/channels/send') && PRESENT.has('GET /api/messages/{messageId}')) {
      // Messages through the real send (sandbox provider): one of the sibling agent, one of the other organization.
      const send = async (orgId: string, agentId: string, authorization: string) => {
        const number = await addNumber(ctx.db, ctx.clock, ctx.messaging.secrets, { orgId, phone: randomPhone() });
        await assignNumber(ctx.db, orgId, agentId, number.phone);
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/channels/send',
          headers: { authorization },
          payload: {
            channel: 'msgapp',
            to: randomPhone(),
            type: 'template',
            convId: agentId,
            template: { name: 'hello_world', language: 'en_US' },
          },
        });
        messageFixtureProblems.push(...(res.statusCode === 200 ? [] : [`send: ${res.statusCode} ${res.body}`]));
        return res.statusCode === 200
          ? { messageId: String(res.json().messageId), conversationId: String(res.json().conversationId) }
          : null;
      };
      // Agents of their own, so the other tests' agents keep having no number.
      const messenger = (await makeAgent(ctx, org.id)).id;
      const otherMessenger = (await makeAgent(ctx, other.id)).id;
      const own = await send(org.id, messenger, `Bearer ${keys['organization:all']?.key}`);
      const foreign = await send(other.id, otherMessenger, `Bearer ${otherKey.key}`);
      fixture.ownMessageId = own?.messageId ?? fixture.ownMessageId;
      fixture.ownConversationId = own?.conversationId ?? fixture.ownConversationId;
      fixture.otherMessageId = foreign?.messageId ?? null;
      fixture.otherConversationId = foreign?.conversationId ?? null;
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  function send(r: RouteCase, authorization: string | undefined, opts: { convId?: string; target?: Target } = {}) {
    const inBody = r.agentTargeted === 'body' && opts.convId !== undefined;
    const body = r.body ? { ...r.body(), ...(inBody ? { convId: opts.convId } : {}) } : undefined;
    return t.app.inject({
      method: r.method,
      url: r.url(fixture, opts.target ?? 'own', opts.convId ?? ownAgent),
      headers: authorization === undefined ? {} : { authorization },
      ...(body ? { payload: body } : {}),
    });
  }

  /** The convId a key should send to hit its own (allowed) agent. */
  const ownConvId = (r: RouteCase) => (r.agentTargeted !== 'none' ? ownAgent : undefined);

  for (const r of ROUTES) {
    const present = isPresent(r);
    const name = present ? label(r) : `${label(r)} (not registered yet: skipped)`;

    describe(name, () => {
      const bearer = (k: string) => `Bearer ${keys[k]?.key ?? 'missing-fixture'}`;
      const check401 = (res: LightMyRequestResponse) => {
        expectEnvelope(res, r.family, 401, 'UNAUTHORIZED');
        const violation = contractViolation(t.app, r.method, r.path, res);
        expect(violation).toBeNull();
      };

      it.skipIf(!present)('401 without an Authorization header', async () => {
        check401(await send(r, undefined, { convId: ownAgent }));
      });
      it.skipIf(!present)('401 when the header is not "Bearer <key>"', async () => {
        check401(await send(r, `Basic ${Buffer.from('a:b').toString('base64')}`, { convId: ownAgent }));
        check401(await send(r, 'Bearer', { convId: ownAgent }));
        check401(await send(r, keys['organization:all']?.key, { convId: ownAgent }));
      });
      it.skipIf(!present)('401 for a malformed key', async () => {
        check401(await send(r, 'Bearer not-a-key', { convId: ownAgent }));
        check401(await send(r, `Bearer ${keys['organization:all']?.key.slice(0, -2)}`, { convId: ownAgent }));
      });
      it.skipIf(!present)('401 for a bad checksum', async () => {
        const k = keys['organization:all']?.key ?? '';
        const typo = k.slice(0, 12) + (k[12] === 'a' ? 'b' : 'a') + k.slice(13);
        check401(await send(r, `Bearer ${typo}`, { convId: ownAgent }));
      });
      it.skipIf(!present)("401 for another region's key (same organization, same database)", async () => {
        const res = await send(r, bearer('otherRegion'), { convId: ownAgent });
        check401(res);
        if (r.family === 'coded') expect(res.json().error).toMatch(/region "eu"/);
      });
      it.skipIf(!present)('401 for an unknown key', async () => {
        check401(await send(r, `Bearer ${generateKey('us').key}`, { convId: ownAgent }));
      });
      it.skipIf(!present)('401 for a revoked key', async () => {
        const res = await send(r, bearer('revoked'), { convId: ownAgent });
        check401(res);
        expect(res.json().error).toBe('This API key has been revoked.');
      });
      it.skipIf(!present)('403 "API access requires a paid plan" on the free plan', async () => {
        for (const k of ['free', 'freeAgent']) {
          const res = await send(r, bearer(k), {});
          expectEnvelope(res, r.family, 403, 'FORBIDDEN');
          expect(res.json().error).toBe('API access requires a paid plan');
          expect(contractViolation(t.app, r.method, r.path, res)).toBeNull();
        }
      });

      const combos = [
        ...PERMISSIONS.map((p) => `organization:${p}`),
        ...PERMISSIONS.filter((p) => p !== 'endusers').map((p) => `agent:${p}`),
        'campaign:campaigns',
        'organization:all',
        'agent:all',
      ];
      for (const combo of combos) {
        const [scope, perm] = combo.split(':') as [Scope, string];
        const needed = typeof r.permission === 'string' ? [r.permission] : r.permission;
        const holds =
          perm === 'all' ? scope !== 'agent' || !needed.includes('endusers') : needed.includes(perm as Permission);
        const allowed =
          holds && !(r.organizationOnly && scope !== 'organization') && !(r.campaignOnly && scope !== 'campaign');
        it.skipIf(!present)(`${combo} key → ${allowed ? 'allowed' : '403'}`, async () => {
          // Organization keys must name the agent; agent keys default to their own.
          const convId = scope === 'organization' ? ownConvId(r) : undefined;
          const res = await send(r, bearer(combo), convId ? { convId } : {});
          if (allowed) expectAllowed(t.app, r, res);
          else {
            expectEnvelope(res, r.family, 403, 'FORBIDDEN');
            expect(contractViolation(t.app, r.method, r.path, res)).toBeNull();
          }
        });
      }

      if (r.agentTargeted !== 'none') {
        it.skipIf(!present)("organization key: own agent allowed, another organization's agent → 404", async () => {
          expectAllowed(t.app, r, await send(r, bearer('organization:all'), { convId: ownAgent }));
          expectAllowed(t.app, r, await send(r, bearer('organization:all'), { convId: siblingAgent }));
          const res = await send(r, bearer('organization:all'), { convId: otherOrgAgent });
          expect(res.statusCode, res.body).toBe(404);
          if (r.family === 'channel') expect(res.json()).toEqual({ success: false, error: expect.any(String) });
          expect(contractViolation(t.app, r.method, r.path, res)).toBeNull();
        });
        it.skipIf(!present)('agent key: own agent (named or implied) allowed, another agent → 403', async () => {
          expectAllowed(t.app, r, await send(r, bearer('agent:all'), {}));
          expectAllowed(t.app, r, await send(r, bearer('agent:all'), { convId: ownAgent }));
          const sibling = await send(r, bearer('agent:all'), { convId: siblingAgent });
          expectEnvelope(sibling, r.family, 403, 'FORBIDDEN');
          expect(sibling.json().error).toBe('This API key is bound to another agent.');
          expect(contractViolation(t.app, r.method, r.path, sibling)).toBeNull();
          // Another organization's agent is "another agent" too: never allowed.
          const foreign = await send(r, bearer('agent:all'), { convId: otherOrgAgent });
          expect([403, 404]).toContain(foreign.statusCode);
        });
      }

      if (r.organizationOnly) {
        it.skipIf(!present)('agent key holding End-users (forced into the database) → 403', async () => {
          const res = await send(r, bearer('agent:forced-endusers'), {});
          expectEnvelope(res, r.family, 403, 'FORBIDDEN');
        });
      }

      if (r.resourceInPath) {
        it.skipIf(!present)(
          "organization key: own organization's record allowed, another organization's → 404",
          async () => {
            if (r.agentOwnedResource) expect(messageFixtureProblems).toEqual([]);
            const own = await send(r, bearer('organization:all'), { target: 'own-record' });
            expectAllowed(t.app, r, own);
            if (r.method === 'GET') expect(own.statusCode, own.body).toBe(200);
            const res = await send(r, bearer('organization:all'), { target: 'other-org' });
            expect(res.statusCode, res.body).toBe(404);
            if (r.family === 'coded') expect(res.json()).toMatchObject({ code: 'NOT_FOUND' });
            else expect(res.json()).toEqual({ success: false, error: expect.any(String) });
            expect(contractViolation(t.app, r.method, r.path, res)).toBeNull();
          },
        );
      }

      if (r.agentOwnedResource) {
        it.skipIf(!present)("agent key: another agent's record is not shown (403 or 404)", async () => {
          const res = await send(r, bearer('agent:all'), { target: 'own-record' });
          expect([403, 404], res.body).toContain(res.statusCode);
          expect(res.json()).toEqual({ success: false, error: expect.any(String) });
          expect(contractViolation(t.app, r.method, r.path, res)).toBeNull();
        });
      }
    });
  }

  it.skipIf(!PRESENT.has('GET /api/endusers/{endUserId}'))(
    "the other organization's record survived (its PATCH and DELETE were 404s, not writes)",
    async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/endusers/${fixture.otherEndUserId}`,
        headers: { authorization: `Bearer ${otherOrgKey}` },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().name).toBe('Fixture');
    },
  );
});
