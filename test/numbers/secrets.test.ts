import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { addNumber, assignNumber } from '../../src/numbers/number.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, PG_URL, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeTenant } from '../helpers/factories.js';
import { randomPhone, signedWebhook, startFakeProvider, statusPayload, templateSend } from '../helpers/messaging.js';

describe('secrets shared by every node', () => {
  it('on PostgreSQL, loadConfig refuses to start without them, naming them and how to make them', () => {
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x', PARLEY_DATA_DIR: tmpdir() };
    expect(() => loadConfig({}, env)).toThrow(ConfigError);
    expect(() => loadConfig({}, env)).toThrow(
      /PARLEY_SECRET_KEY and PARLEY_WEBHOOK_APP_SECRET must be set when running on PostgreSQL.*openssl rand -base64 32/,
    );
    expect(() => loadConfig({}, { ...env, PARLEY_SECRET_KEY: 'k' })).toThrow(/^PARLEY_WEBHOOK_APP_SECRET must be set/);
    // The embedded default needs none: it generates them into its data folder.
    expect(() => loadConfig({}, { PARLEY_DATA_DIR: tmpdir() })).not.toThrow();
  });

  it('parley serve on PostgreSQL without them exits with that message', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-secrets-'));
    try {
      const res = await runCli(['serve', '--port', '39999'], {
        DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
        PARLEY_DATA_DIR: dataDir,
      });
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('PARLEY_SECRET_KEY and PARLEY_WEBHOOK_APP_SECRET must be set');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** Two nodes on one PostgreSQL database, each with a data folder of its own. */
describe.skipIf(!PG_URL)('two nodes with their own data folders', () => {
  let a: TestApp;
  let b: TestApp;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;

  beforeAll(async () => {
    provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: `wamid.shared${randomBase62(8)}` }] },
    }));
    const env = { PARLEY_PROVIDER_BASE_URL: provider.url };
    a = await createTestApp('postgres', { env });
    b = await createTestApp('postgres', { env, shareWith: a, ownDataDir: true });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await provider?.close();
  });

  it('a number added through one node sends through the other; a webhook signed once is accepted by both', async () => {
    expect(a.env.PARLEY_DATA_DIR).not.toBe(b.env.PARLEY_DATA_DIR);
    const tenant = await makeTenant(a.ctx);
    const phoneNumberId = String(Date.now()).slice(-12);
    const number = await addNumber(a.ctx.db, a.ctx.clock, a.ctx.messaging.secrets, {
      orgId: tenant.org.id,
      phone: randomPhone(),
      provider: 'cloud',
      phoneNumberId,
      accessToken: 'EAAG-shared-token',
    });
    await assignNumber(a.ctx.db, tenant.org.id, tenant.agent.id, number.phone);
    const sent = await b.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: templateSend(),
    });
    expect(sent.statusCode).toBe(200);
    expect(provider.requests.at(-1)?.authorization).toBe('Bearer EAAG-shared-token');

    const payload = statusPayload(phoneNumberId, [
      { id: sent.json().messageId, status: 'delivered', timestamp: Date.now() },
    ]);
    for (const node of [a, b]) {
      const { body, headers } = signedWebhook(a.ctx.messaging.appSecret, payload);
      const res = await node.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
      expect(res.statusCode).toBe(200);
    }
  });
});
