import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageOfAudit } from '../../src/audit/audit.service.js';
import { pageOfCampaignDeliveries } from '../../src/campaigns/index.js';
import { pageOfConversationSummaries } from '../../src/conversations/conversation-list.service.js';
import { pageOfEndUsers } from '../../src/end-users/end-user.service.js';
import { pageOfKeys } from '../../src/keys/key-lists.service.js';
import { encodeCursor } from '../../src/shared/cursor.js';
import type { TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/app.js';
import {
  deliveryStatusOf,
  lastTextOf,
  nameOf,
  phoneOf,
  ROWS,
  type Seeded,
  seedLists,
  starterOf,
  T0,
} from '../helpers/bulk.js';
import { makeUser, type SignedIn, signInAs } from '../helpers/dashboard.js';
import { createQuietTestApp } from '../helpers/messaging.js';
import { capture, type Plan, planOf } from '../helpers/plans.js';

/**
 * Every list of the dashboard with 10,000 rows, a page at a time, as a person reads it: the first
 * page's rows, the next page's first row, Previous back to where they were, the filters kept from
 * page to page, 50 rows a page, and a last page without Next.
 */

const PAGE = 50;
/** Row numbers i from newest to oldest: 9,999 down to 0. */
const newestFirst = Array.from({ length: ROWS }, (_, k) => ROWS - 1 - k);

const decode = (href: string) => href.replaceAll('&amp;', '&');
const linkOf = (body: string, rel: 'next' | 'prev', label = 'Pages') => {
  const nav = new RegExp(`<nav aria-label="${label}" class="pager">([\\s\\S]*?)</nav>`).exec(body)?.[1] ?? '';
  const href = new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(nav)?.[1];
  return href === undefined ? undefined : decode(href);
};
const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

describe.each(DIALECTS)('dashboard lists of 10,000 rows (%s)', (dialect) => {
  let t: TestApp;
  let seeded: Seeded;
  let owner: SignedIn;
  const get = async (url: string): Promise<LightMyRequestResponse> => {
    const res = await owner.get(url);
    expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBe(200);
    return res;
  };

  beforeAll(async () => {
    // The rows are dated a month back: the idle sweep must not close their conversations meanwhile.
    t = await createQuietTestApp(dialect, { env: { PARLEY_CONVERSATION_IDLE_MS: String(10 * 365 * 86_400_000) } });
    const started = Date.now();
    seeded = await seedLists(t.ctx, dialect);
    // A bulk insert in one transaction, not 10,000 requests: kept well inside the file's budget.
    expect(Date.now() - started).toBeLessThan(30_000);
    owner = await signInAs(t.app, (await makeUser(t.ctx, seeded.orgId, 'owner')).email);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  describe("a campaign's deliveries", () => {
    const base = () => `/dashboard/campaigns/${seeded.campaignId}`;
    const deliveryRows = (body: string) =>
      [...body.matchAll(/<tr><td>(\+\d+)<\/td><td>(\w+)<\/td>/g)].map((m) => [m[1], m[2]]);
    const LABEL = { queued: 'Queued', failed: 'Failed', delivered: 'Delivered' } as const;
    const rowOf = (i: number) => [phoneOf(i), LABEL[deliveryStatusOf(i)]];

    it('shows 50 a page, newest first; Next and Previous move by exactly one page; the last page has no Next', async () => {
      const first = (await get(base())).body;
      expect(deliveryRows(first)).toEqual(newestFirst.slice(0, PAGE).map(rowOf));
      expect(first).toContain(', most recent first, 50 a page</caption>');
      expect(first).toContain('<nav aria-label="Pages" class="pager">');
      expect(linkOf(first, 'prev')).toBeUndefined();
      const next = linkOf(first, 'next');
      expect(next).toMatch(new RegExp(`^${base()}\\?cursor=`));

      const second = (await get(next ?? '')).body;
      expect(deliveryRows(second)[0]).toEqual(rowOf(ROWS - 1 - PAGE));
      expect(deliveryRows(second)).toHaveLength(PAGE);
      const back = (await get(linkOf(second, 'prev') ?? '')).body;
      expect(deliveryRows(back)).toEqual(deliveryRows(first));
      expect(linkOf(back, 'prev')).toBeUndefined();

      // The last page: the 50 oldest, reached from the cursor of the 51st oldest (as its Next gives it).
      const last = (await get(`${base()}?cursor=${encodeCursor(T0 + PAGE, seeded.deliveryIds[PAGE] ?? '')}`)).body;
      expect(deliveryRows(last)).toEqual(newestFirst.slice(-PAGE).map(rowOf));
      expect(linkOf(last, 'next')).toBeUndefined();
      expect(linkOf(last, 'prev')).toBeDefined();
    });

    it('filters by status, keeps the filter from page to page, and ends on a page without Next', async () => {
      const failed = newestFirst.filter((i) => deliveryStatusOf(i) === 'failed');
      const seen: string[] = [];
      let url: string | undefined = `${base()}?status=failed`;
      let pages = 0;
      while (url) {
        const body = (await get(url)).body;
        pages++;
        expect(body).toContain('<option value="failed" selected>Failed</option>');
        expect(body).toContain('with status Failed, most recent first, 50 a page</caption>');
        const rows = deliveryRows(body);
        expect(rows.length).toBeLessThanOrEqual(PAGE);
        expect(new Set(rows.map((r) => r[1]))).toEqual(new Set(['Failed']));
        seen.push(...rows.map((r) => r[0] ?? ''));
        url = linkOf(body, 'next');
        if (url) expect(url).toContain('status=failed');
      }
      expect(pages).toBe(failed.length / PAGE);
      expect(seen).toEqual(failed.map(phoneOf));
    });

    it('shows the progress by status above the list, and the keys before the deliveries', async () => {
      const body = (await get(base())).body;
      expect(body).toContain('<p id="campaign-progress">4000 of 10000 handled (40%), 2000 failed.</p>');
      expect(body).toContain(
        '<progress value="6000" max="10000" aria-label="Queued: 6000 of 10000 (60%)">60%</progress> <span class="status-count">6000 · 60%</span>',
      );
      expect(body).toContain('aria-label="Delivered: 2000 of 10000 (20%)"');
      expect(body).toContain('aria-label="Failed: 2000 of 10000 (20%)"');
      expect(body).toContain('aria-label="Sending: 0 of 10000 (0%)"');
      const at = (text: string) => body.indexOf(text);
      expect(at('id="progress-title"')).toBeGreaterThan(0);
      expect(at('id="progress-title"')).toBeLessThan(at('id="keys-title"'));
      expect(at('id="keys-title"')).toBeLessThan(at('id="deliveries-title"'));
      expect(at('id="deliveries-title"')).toBeLessThan(body.search(/<tr><td>\+1/));
      // No inline style anywhere: the page's policy forbids it.
      expect(body).not.toMatch(/ style=/);
    });

    it('shows a bar of progress per campaign on the campaigns list', async () => {
      const body = (await get('/dashboard/campaigns')).body;
      expect(body).toContain(
        `<td class="progress-cell"><progress value="4000" max="10000" aria-hidden="true"></progress> <span>4000 of 10000 handled (40%), 2000 failed</span></td>`,
      );
      expect(body).toContain(`>${escapeHtml(seeded.campaignName)}</a>`);
    });

    it('answers a cursor it never gave with a page that says so', async () => {
      const res = await owner.get(`${base()}?cursor=not-a-cursor`);
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain('Invalid query parameter: &#39;cursor&#39; is not a cursor this page gave.');
    });
  });

  describe('conversations', () => {
    const conversationRows = (body: string) => [...body.matchAll(/<tr data-conversation-id="([^"]+)">(.*?)<\/tr>/g)];
    const indexOf = (id: string | undefined) => seeded.conversationIds.indexOf(id ?? '');

    it('names the end user, shows the last message and its time, and what started it; 50 a page', async () => {
      const body = (await get('/dashboard/conversations')).body;
      const rows = conversationRows(body);
      expect(rows.map((r) => indexOf(r[1]))).toEqual(newestFirst.slice(0, PAGE));
      expect(body).toContain('Conversations, newest first, 50 a page</caption>');
      // No end user shown by ID.
      expect(rows.map((r) => r[2]).join('')).not.toMatch(/>eu_/);
      const cell = (i: number) => rows.find((r) => indexOf(r[1]) === i)?.[2] ?? '';
      // 9,999: odd (a phone only), started by the campaign, last message the agent's.
      expect(cell(9999)).toContain(`>${phoneOf(9999)}</a></td>`);
      expect(cell(9999)).toContain(`<span class="preview">Agent: ${lastTextOf(9999)}</span>`);
      expect(cell(9999)).toContain(
        `<a href="/dashboard/campaigns/${seeded.campaignId}">Campaign: ${escapeHtml(seeded.campaignName)}</a>`,
      );
      expect(cell(9999)).toContain('<small class="when">2026-11-02 09:01 UTC</small>');
      // 9,998: a name and its phone, started by the end user, whose words are escaped.
      expect(starterOf(9998)).toBe('customer');
      expect(cell(9998)).toContain(`>${nameOf(9998)}</a><br><small>${phoneOf(9998)}</small>`);
      expect(cell(9998)).toContain(`<span class="preview">End user: ${escapeHtml(lastTextOf(9998))}</span>`);
      expect(cell(9998)).toContain('<td>Customer</td>');
      // 9,997: a trigger.
      expect(cell(9997)).toContain(`<td>Trigger: ${seeded.triggerName}</td>`);

      const second = (await get(linkOf(body, 'next') ?? '')).body;
      expect(indexOf(conversationRows(second)[0]?.[1])).toBe(ROWS - 1 - PAGE);
      const back = (await get(linkOf(second, 'prev') ?? '')).body;
      expect(conversationRows(back).map((r) => r[1])).toEqual(rows.map((r) => r[1]));
    });

    it('keeps the status filter from page to page; the last page has no Next', async () => {
      const open = newestFirst.filter((i) => i % 2 === 0);
      const first = (await get('/dashboard/conversations?status=open')).body;
      expect(first).toContain('<option value="open" selected>Open</option>');
      expect(conversationRows(first).map((r) => indexOf(r[1]))).toEqual(open.slice(0, PAGE));
      const next = linkOf(first, 'next') ?? '';
      expect(next).toContain('status=open');
      expect(indexOf(conversationRows((await get(next)).body)[0]?.[1])).toBe(open[PAGE]);

      const lastFrom = open[open.length - PAGE - 1] ?? 0;
      const cursor = encodeCursor(T0 + lastFrom, seeded.conversationIds[lastFrom] ?? '');
      const last = (await get(`/dashboard/conversations?status=open&cursor=${cursor}`)).body;
      expect(conversationRows(last).map((r) => indexOf(r[1]))).toEqual(open.slice(-PAGE));
      expect(linkOf(last, 'next')).toBeUndefined();
    });
  });

  describe('end users', () => {
    const endUserRows = (body: string) => [...body.matchAll(/<tr data-end-user-id="([^"]+)"><td>([^<]*)<\/td>/g)];
    const indexOf = (id: string | undefined) => seeded.endUserIds.indexOf(id ?? '');

    it('pages through all of them, newest first, 50 a page', async () => {
      const first = (await get('/dashboard/end-users')).body;
      expect(endUserRows(first).map((r) => indexOf(r[1]))).toEqual(newestFirst.slice(0, PAGE));
      expect(endUserRows(first)[0]?.[2]).toBe('—');
      expect(endUserRows(first)[1]?.[2]).toBe('Person 9998');
      expect(first).toContain(', newest first, 50 a page</caption>');
      const second = (await get(linkOf(first, 'next') ?? '')).body;
      expect(indexOf(endUserRows(second)[0]?.[1])).toBe(ROWS - 1 - PAGE);
      expect(endUserRows((await get(linkOf(second, 'prev') ?? '')).body).map((r) => r[1])).toEqual(
        endUserRows(first).map((r) => r[1]),
      );
    });

    it('keeps the search from page to page and ends without Next', async () => {
      const matching = newestFirst.filter((i) => nameOf(i)?.startsWith('Person 99'));
      const first = (await get('/dashboard/end-users?q=Person+99')).body;
      expect(first).toContain('value="Person 99"');
      expect(endUserRows(first).map((r) => indexOf(r[1]))).toEqual(matching.slice(0, PAGE));
      const next = linkOf(first, 'next') ?? '';
      expect(next).toContain('q=Person+99');
      const second = (await get(next)).body;
      expect(endUserRows(second).map((r) => indexOf(r[1]))).toEqual(matching.slice(PAGE));
      expect(linkOf(second, 'next')).toBeUndefined();
    });
  });

  it('pages through the audit log (no longer the newest 500 only); the last page has no Next', async () => {
    const actors = (body: string) =>
      [...body.matchAll(/<tr><td class="when">[^<]+<\/td><td>([^<]+)<\/td>/g)].map((m) =>
        m[1]?.replace(/@example\.com$/, ''),
      );
    const first = (await get('/dashboard/audit')).body;
    // The newest entry: the owner this test added (from the command line), then the 10,000.
    expect(actors(first)).toEqual(['Command line (cli)', ...newestFirst.slice(0, PAGE - 1).map((i) => `person${i}`)]);
    expect(first).toContain(', newest first, 50 a page</caption>');
    const second = (await get(linkOf(first, 'next') ?? '')).body;
    expect(actors(second)[0]).toBe(`person${ROWS - PAGE}`);
    const last = (await get(`/dashboard/audit?cursor=${encodeCursor(T0 + PAGE, seeded.auditIds[PAGE] ?? '')}`)).body;
    expect(actors(last)).toEqual(newestFirst.slice(-PAGE).map((i) => `person${i}`));
    expect(linkOf(last, 'next')).toBeUndefined();
  });

  it('lists active keys a page at a time, and the revoked ones apart, collapsed, paged on their own', async () => {
    const KEYS = '/dashboard/settings/integrations/api-keys';
    const labels = (html: string) =>
      [...html.matchAll(/<tr data-key-id="[^"]+">\n<td>Key (\d+)<\/td>/g)].map((m) => Number(m[1]));
    const split = (body: string) => {
      const at = body.indexOf('<details class="revoked-keys"');
      return { active: body.slice(0, at), revoked: body.slice(at) };
    };
    const active = newestFirst.filter((i) => i % 4 !== 0);
    const revoked = newestFirst.filter((i) => i % 4 === 0);

    const first = split((await get(KEYS)).body);
    expect(labels(first.active)).toEqual(active.slice(0, PAGE));
    expect(first.revoked).toMatch(/^<details class="revoked-keys">\n<summary>Revoked keys \(2500\)<\/summary>/);
    expect(labels(first.revoked)).toEqual(revoked.slice(0, PAGE));
    expect(first.revoked).toContain(`<td class="when">${'2026-11-02 09:00 UTC'}</td>\n</tr>`);

    const nextActive = split((await get(linkOf(first.active, 'next') ?? '')).body);
    expect(labels(nextActive.active)[0]).toBe(active[PAGE]);
    expect(labels(nextActive.revoked)).toEqual(revoked.slice(0, PAGE));

    const revokedNext = linkOf(first.revoked, 'next', 'Pages of revoked keys') ?? '';
    expect(revokedNext).toContain('revoked_cursor=');
    const second = split((await get(revokedNext)).body);
    // Open, so the person paging sees where they are; the active keys stay on their first page.
    expect(second.revoked).toMatch(/^<details class="revoked-keys" open>/);
    expect(labels(second.revoked)[0]).toBe(revoked[PAGE]);
    expect(labels(second.active)).toEqual(active.slice(0, PAGE));
  });
});

/**
 * How the database runs each page's statement: through the list's index in its order (no sort, no
 * whole-table scan), and on PostgreSQL (EXPLAIN ANALYZE) reading about a page of rows, the same on
 * a page deep in the list as on the first.
 */
describe.each(DIALECTS)('plans of the dashboard pages (%s)', (dialect) => {
  let t: TestApp;
  let seeded: Seeded;
  const BIG = [
    'campaign_deliveries',
    'conversations',
    'end_users',
    'audit_log',
    'api_keys',
    'messages',
    'inbound_messages',
  ];

  beforeAll(async () => {
    t = await createQuietTestApp(dialect);
    seeded = await seedLists(t.ctx, dialect);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** The plan of the page statement `run` makes (the last statement that reads `table`), on the first page and a deep one. */
  async function plansOf(
    table: string,
    run: (db: TestApp['ctx']['db'], cursor: string | undefined) => Promise<unknown>,
    deepCursor: string,
  ) {
    const plans = [];
    for (const cursor of [undefined, deepCursor]) {
      const spy = capture(t.ctx.db);
      await run(spy.db, cursor);
      const statement = spy.statements.filter((s) => s.sql.includes(`"${table}"`) && /limit/i.test(s.sql)).at(-1);
      if (!statement) throw new Error(`no statement on ${table}`);
      plans.push(await planOf(t.ctx.db, dialect, statement));
    }
    return plans;
  }
  const middle = 5_000;
  const at = (ids: string[]) => encodeCursor(T0 + middle, ids[middle] ?? '');

  function expectIndexed(plans: Plan[], index: string, table: string, maxRows: number) {
    for (const plan of plans) {
      expect(plan.indexes, plan.text).toContain(index);
      expect(plan.sorts, plan.text).toBe(false);
      expect(
        plan.fullScans.filter((s) => BIG.includes(s) || s.length <= 3),
        plan.text,
      ).toEqual([]);
      // A deep page also reads the cursor's own row, which the seek's tie-break drops.
      if (dialect === 'postgres') expect(plan.rowsRead[table] ?? 0, plan.text).toBeLessThanOrEqual(maxRows + 1);
    }
    if (dialect === 'postgres') {
      expect(plans[1]?.rowsRead[table] ?? 0).toBeLessThanOrEqual((plans[0]?.rowsRead[table] ?? 0) + 1);
    }
  }

  it("a campaign's deliveries, all and of one status", async () => {
    const all = await plansOf(
      'campaign_deliveries',
      (db, cursor) => pageOfCampaignDeliveries({ db }, seeded.orgId, seeded.campaignId, { limit: PAGE, cursor }),
      at(seeded.deliveryIds),
    );
    expectIndexed(all, 'campaign_deliveries_list_idx', 'campaign_deliveries', PAGE + 1);
    // One in five failed: a page reads a window of the index (about four pages of rows, then more
    // windows if it is not full yet), wherever it is.
    const failed = await plansOf(
      'campaign_deliveries',
      (db, cursor) =>
        pageOfCampaignDeliveries({ db }, seeded.orgId, seeded.campaignId, { limit: PAGE, cursor, status: 'failed' }),
      at(seeded.deliveryIds),
    );
    expectIndexed(failed, 'campaign_deliveries_list_idx', 'campaign_deliveries', 5 * (PAGE + 1));
  });

  it('conversations, with their end users, starters and last messages in the same statement', async () => {
    const plans = await plansOf(
      'conversations',
      (db, cursor) => pageOfConversationSummaries(db, seeded.orgId, {}, { limit: PAGE, cursor }),
      at(seeded.conversationIds),
    );
    expectIndexed(plans, 'conversations_org_started_idx', 'conversations', PAGE + 1);
    for (const plan of plans) {
      expect(plan.indexes, plan.text).toContain('messages_conversation_idx');
      expect(plan.indexes, plan.text).toContain('inbound_messages_conversation_idx');
      if (dialect === 'postgres') {
        expect(plan.rowsRead.messages ?? 0, plan.text).toBeLessThanOrEqual(2 * (PAGE + 1));
        expect(plan.rowsRead.inbound_messages ?? 0, plan.text).toBeLessThanOrEqual(3 * (PAGE + 1));
      }
    }
  });

  it('end users, the audit log and the API keys', async () => {
    expectIndexed(
      await plansOf(
        'end_users',
        (db, cursor) => pageOfEndUsers(db, seeded.orgId, {}, { limit: PAGE, cursor }),
        at(seeded.endUserIds),
      ),
      'end_users_org_created_idx',
      'end_users',
      PAGE + 1,
    );
    expectIndexed(
      await plansOf(
        'audit_log',
        (db, cursor) => pageOfAudit(db, seeded.orgId, { limit: PAGE, cursor }),
        at(seeded.auditIds),
      ),
      'audit_log_org_at_id_idx',
      'audit_log',
      PAGE + 1,
    );
    // Three keys in four are active: a page of them reads about 4/3 of a page.
    expectIndexed(
      await plansOf(
        'api_keys',
        (db, cursor) => pageOfKeys(db, seeded.orgId, { revoked: false }, { limit: PAGE, cursor }),
        at(seeded.keyIds),
      ),
      'api_keys_org_created_id_idx',
      'api_keys',
      2 * (PAGE + 1),
    );
  });
});
