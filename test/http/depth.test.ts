import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_DEPTH } from '../../src/http/json-body.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { makeCampaignTenant, phones } from '../helpers/campaigns.js';
import { makeTrigger } from '../helpers/factories.js';
import { makeSendingTenant } from '../helpers/messaging.js';

/**
 * One depth rule for every JSON body, checked before parsing: nothing downstream (the trigger's
 * stored context, the idempotency hash of a body) recurses over a client's value. One dialect proves
 * it: the refusal happens before any database work.
 */
describe('JSON bodies nest at most MAX_BODY_DEPTH levels', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t.close();
  });

  const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}[1]${'}'.repeat(depth - 1)}`;

  it('a trigger whose context nests 5,000 levels is a 400 in the channel envelope, not a 500', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'welcome');
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/triggers/${tenant.agent.id}/welcome`,
      headers: { ...tenant.orgKey.auth, 'content-type': 'application/json' },
      payload: `{"to":"+14155550111","context":{"a":${'['.repeat(5_000)}1${']'.repeat(5_000)}}}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      success: false,
      error: `The request body nests deeper than ${MAX_BODY_DEPTH} levels of objects and arrays; flatten it.`,
    });
  });

  it('a campaign webhook nesting 8,000 levels with an Idempotency-Key is a 400 in the campaign envelope', async () => {
    const c = await makeCampaignTenant(t.ctx);
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/campaigns/${c.campaign.id}/webhook`,
      headers: { ...c.campaignKey.auth, 'content-type': 'application/json', 'idempotency-key': 'deep-1' },
      payload: `{"recipients": ${'['.repeat(8_000)}${']'.repeat(8_000)}}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, error: expect.stringContaining('nests deeper than') });
  });

  it('a body at exactly the limit is parsed; one level more is refused; brackets inside strings do not count', async () => {
    const c = await makeCampaignTenant(t.ctx);
    const post = (payload: string) =>
      t.app.inject({
        method: 'POST',
        url: `/api/campaigns/${c.campaign.id}/webhook`,
        headers: { ...c.campaignKey.auth, 'content-type': 'application/json' },
        payload,
      });
    // At the limit the body parses and reaches validation (which refuses the shape, naming it).
    const atLimit = await post(nested(MAX_BODY_DEPTH));
    expect(atLimit.statusCode).toBe(400);
    expect(atLimit.json().error).not.toContain('nests deeper');
    const over = await post(nested(MAX_BODY_DEPTH + 1));
    expect(over.statusCode).toBe(400);
    expect(over.json().error).toContain('nests deeper');
    // 100 brackets inside a string value are text, not nesting: the recipient is accepted.
    const [phone] = phones(1);
    const inString = await post(JSON.stringify({ recipients: [{ phone, name: '['.repeat(100) }] }));
    expect(inString.statusCode).toBe(202);
  });
});
