import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DIALECTS } from '../helpers/app.js';
import { createMessagingApp, makeSendingTenant, postTemplateSend } from '../helpers/messaging.js';

describe('PARLEY_SANDBOX_STATUSES', () => {
  it('is on unless set to false or 0', () => {
    expect(loadConfig({}, {}).messaging.sandboxStatuses).toBe(true);
    expect(loadConfig({}, { PARLEY_SANDBOX_STATUSES: '' }).messaging.sandboxStatuses).toBe(true);
    expect(loadConfig({}, { PARLEY_SANDBOX_STATUSES: 'true' }).messaging.sandboxStatuses).toBe(true);
    expect(loadConfig({}, { PARLEY_SANDBOX_STATUSES: 'false' }).messaging.sandboxStatuses).toBe(false);
    expect(loadConfig({}, { PARLEY_SANDBOX_STATUSES: '0' }).messaging.sandboxStatuses).toBe(false);
    expect(() => loadConfig({}, { PARLEY_SANDBOX_STATUSES: 'nope' })).toThrow(/PARLEY_SANDBOX_STATUSES/);
  });
});

describe.each(DIALECTS)('the sandbox with status webhooks on and off (%s)', (dialect) => {
  for (const statuses of ['true', 'false']) {
    it(`PARLEY_SANDBOX_STATUSES=${statuses}: a send ${statuses === 'true' ? 'is' : 'is not'} followed by sent, delivered and read`, async () => {
      const t = await createMessagingApp(dialect, { env: { PARLEY_SANDBOX_STATUSES: statuses } });
      try {
        const tenant = await makeSendingTenant(t.ctx);
        const sent = await postTemplateSend(t, tenant.agentKey.auth);
        expect(sent.statusCode).toBe(200);
        const { messageId } = sent.json() as { messageId: string };
        // Every webhook the sandbox scheduled has been delivered and applied.
        await t.settle();
        const read = await t.app.inject({
          method: 'GET',
          url: `/api/messages/${encodeURIComponent(messageId)}`,
          headers: tenant.agentKey.auth,
        });
        expect(read.statusCode).toBe(200);
        const { message } = read.json() as { message: { status: string; statuses: { status: string }[] } };
        if (statuses === 'true') {
          expect(message.statuses.map((s) => s.status)).toEqual(['sent', 'delivered', 'read']);
          expect(message.status).toBe('read');
        } else {
          expect(message.statuses).toEqual([]);
        }
      } finally {
        await t.close();
      }
    });
  }
});
