import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createSecretBox, secretKeyOf } from '../../src/numbers/secret-box.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import { freePort, runCli, startServe } from '../helpers/cli.js';
import { openApiDocument } from '../helpers/contract.js';
import { makeOrg } from '../helpers/factories.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';

describe('access tokens at rest', () => {
  it('are sealed with AES-256-GCM; tampering is detected; the key file is 0600', async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'parley-secret-'));
    const key = secretKeyOf(undefined, dir);
    expect(key).toHaveLength(32);
    expect(statSync(join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
    expect(secretKeyOf(undefined, dir).equals(key)).toBe(true); // generated once
    const box = createSecretBox(key);
    const sealed = box.seal('EAAG-token');
    expect(sealed).not.toContain('EAAG');
    expect(box.seal('EAAG-token')).not.toBe(sealed); // fresh IV
    expect(box.open(sealed)).toBe('EAAG-token');
    const parts = sealed.split('.');
    // Flip one bit of the ciphertext itself (editing base64 text can leave the bytes unchanged).
    const data = Buffer.from(parts[3] ?? '', 'base64url');
    data[0] = (data[0] ?? 0) ^ 0x01;
    const tampered = [...parts.slice(0, 3), data.toString('base64url')].join('.');
    expect(tampered).not.toBe(sealed);
    expect(() => box.open(tampered)).toThrow();
    expect(secretKeyOf('a'.repeat(64), dir)).toHaveLength(32);
    expect(() => secretKeyOf('short', dir)).toThrow(/32 bytes/);
  });

  it('configuration: provider settings, sandbox templates', () => {
    const config = loadConfig(
      {},
      {
        PARLEY_PROVIDER_BASE_URL: 'https://graph.example.com/',
        PARLEY_PROVIDER_API_VERSION: 'v21.0',
        PARLEY_PROVIDER_TIMEOUT_MS: '2500',
        PARLEY_SANDBOX_TEMPLATES: '[{"name":"shipping","language":"pt_BR","body":1}]',
      },
    );
    expect(config.messaging).toMatchObject({
      providerBaseUrl: 'https://graph.example.com',
      providerApiVersion: 'v21.0',
      providerTimeoutMs: 2500,
      sandboxTemplates: [{ name: 'shipping', language: 'pt_BR', header: 0, body: 1 }],
    });
    expect(() => loadConfig({}, { PARLEY_PROVIDER_API_VERSION: '25' })).toThrow(/v25.0/);
    expect(() => loadConfig({}, { PARLEY_SANDBOX_TEMPLATES: '{' })).toThrow(/JSON array/);
  });
});

describe.each(DIALECTS)('messaging numbers from the CLI (%s)', (dialect) => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, {
      env: { PARLEY_SANDBOX_TEMPLATES: '[{"name":"shipping","language":"pt_BR","body":1}]' },
    });
  });
  afterAll(async () => {
    await t.close();
  });
  const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { ...t.env, ...env });

  // Ten CLI processes, the refusals among them at once: under a busy machine each can take seconds to start.
  it('number add: a sandbox number by default; a cloud number with its token from the environment', async () => {
    const org = await makeOrg(t.ctx);
    const phone = randomPhone();
    const sandbox = await cli(['number', 'add', '--org', org.id, '--phone', phone, '--json']);
    expect(sandbox.code).toBe(0);
    expect(sandbox.json()).toMatchObject({ phone, provider: 'sandbox', phoneNumberId: expect.stringMatching(/^\d+$/) });

    const cloudPhone = randomPhone();
    const cloud = await cli(
      [
        'number',
        'add',
        '--org',
        org.id,
        '--phone',
        cloudPhone,
        '--provider',
        'cloud',
        '--phone-number-id',
        '106540352242922',
        '--access-token-env',
        'TEST_MSGAPP_TOKEN',
        '--json',
      ],
      { TEST_MSGAPP_TOKEN: 'EAAG-very-secret' },
    );
    expect(cloud.code).toBe(0);
    expect(cloud.stdout + cloud.stderr).not.toContain('EAAG');
    expect(cloud.json()).toMatchObject({ phone: cloudPhone, provider: 'cloud', phoneNumberId: '106540352242922' });
    const row = await t.ctx.db
      .selectFrom('messaging_numbers')
      .select('access_token_enc')
      .where('phone', '=', cloudPhone)
      .executeTakeFirstOrThrow();
    expect(row.access_token_enc).not.toContain('EAAG');
    // The same secret key (data folder) opens it.
    expect(t.ctx.messaging.secrets.open(row.access_token_enc ?? '')).toBe('EAAG-very-secret');

    // The refusals at once: none depends on another, and each is a Node process of its own.
    const [missingToken, duplicate, badPhone, sameId, ...rest] = await Promise.all([
      cli([
        'number',
        'add',
        '--org',
        org.id,
        '--phone',
        randomPhone(),
        '--provider',
        'cloud',
        '--phone-number-id',
        '1',
        '--access-token-env',
        'TEST_UNSET_TOKEN_VAR',
      ]),
      cli(['number', 'add', '--org', org.id, '--phone', phone]),
      cli(['number', 'add', '--org', org.id, '--phone', '12345']),
      // The same phone number ID twice: a clear sentence, not a database error.
      cli(
        [
          'number',
          'add',
          '--org',
          org.id,
          '--phone',
          randomPhone(),
          '--provider',
          'cloud',
          '--phone-number-id',
          '106540352242922',
          '--access-token-env',
          'TEST_MSGAPP_TOKEN',
        ],
        { TEST_MSGAPP_TOKEN: 'EAAG-other' },
      ),
      // Cloud-only options without --provider cloud are refused, not silently dropped.
      ...[
        ['--phone-number-id', '123'],
        ['--access-token-env', 'TEST_MSGAPP_TOKEN'],
      ].map((extra) =>
        cli(['number', 'add', '--org', org.id, '--phone', randomPhone(), ...extra], {
          TEST_MSGAPP_TOKEN: 'EAAG-dropped',
        }),
      ),
      cli(['number', 'list', '--org', 'org_doesnotexist']),
    ]);
    expect(missingToken.code).toBe(1);
    expect(missingToken.stderr).toMatch(/TEST_UNSET_TOKEN_VAR is not set/);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toBe(`parley: the number ${phone} is already registered in this organization\n`);
    expect(badPhone.code).toBe(1);
    expect(badPhone.stderr).toMatch(/international format/);
    expect(sameId.code).toBe(1);
    expect(sameId.stderr).toBe(
      `parley: the phone number ID 106540352242922 is already registered (number ${cloudPhone})\n`,
    );
    const unknownOrg = rest.pop();
    for (const refused of rest) {
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        'parley: --phone-number-id and --access-token-env are only for a cloud number: add --provider cloud\n',
      );
    }
    expect(unknownOrg?.code).toBe(1);
    expect(unknownOrg?.stderr).toBe('parley: unknown organization "org_doesnotexist"\n');

    // After every refusal: none of them added a number.
    const list = await cli(['number', 'list', '--org', org.id, '--json']);
    expect(
      list
        .json<{ phone: string }[]>()
        .map((n) => n.phone)
        .sort(),
    ).toEqual([phone, cloudPhone].sort());
  }, 120_000);

  it('agent create --number stores nothing when the number is refused', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const stranger = await makeSendingTenant(t.ctx);
    const agentsOf = () => t.ctx.db.selectFrom('agents').select('id').where('org_id', '=', tenant.org.id).execute();
    const numbers = () => t.ctx.db.selectFrom('messaging_numbers').select('id').execute();
    const agentsBefore = await agentsOf();
    const numbersBefore = await numbers();
    // Both refusals at once: neither depends on the other.
    const [invalid, taken] = await Promise.all([
      cli(['agent', 'create', '--org', tenant.org.id, '--name', 'Bad', '--number', '12345']),
      cli(['agent', 'create', '--org', tenant.org.id, '--name', 'Thief', '--number', stranger.number.phone]),
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe('parley: "12345" is not a phone number in international format (+E.164)\n');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe(`parley: the number ${stranger.number.phone} is registered to another organization\n`);
    expect(await agentsOf()).toEqual(agentsBefore);
    expect((await numbers()).length).toBe(numbersBefore.length);
    // Its own existing number is assigned, not added again.
    const own = await cli([
      'agent',
      'create',
      '--org',
      tenant.org.id,
      '--name',
      'Twin',
      '--number',
      tenant.number.phone,
      '--json',
    ]);
    expect(own.code).toBe(0);
    const agent = own.json<{ id: string; number: string }>();
    expect(agent.number).toBe(tenant.number.phone);
    const row = await t.ctx.db
      .selectFrom('agents')
      .select('number_id')
      .where('id', '=', agent.id)
      .executeTakeFirstOrThrow();
    expect(row.number_id).toBe(tenant.number.id);
    expect((await numbers()).length).toBe(numbersBefore.length);
  }, 60_000);

  it('agent create --number assigns a number (a new sandbox number when the org has none such) and it sends', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const phone = randomPhone();
    const created = await cli([
      'agent',
      'create',
      '--org',
      tenant.org.id,
      '--name',
      'Sales',
      '--number',
      phone,
      '--json',
    ]);
    expect(created.code).toBe(0);
    const agent = created.json<{ id: string; number: string }>();
    expect(agent.number).toBe(phone);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.orgKey.auth,
      payload: {
        channel: 'msgapp',
        to: randomPhone(),
        type: 'template',
        convId: agent.id,
        template: { name: 'shipping', language: 'pt_BR', parameters: { body: ['BR123'] } },
      },
    });
    expect(res.statusCode).toBe(200);
    await t.settle();
  });
});

describe.each(DIALECTS)('parley serve with its sandbox, and `parley sandbox inbound` (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  // A server and five CLI processes: a generous bound, for a busy machine.
  it('a user writing in through the CLI opens the window for free text', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const port = await freePort();
    const server = await startServe(['--port', String(port)], t.env);
    try {
      const base = server.ready.regions[0]?.url ?? '';
      const user = randomPhone();
      const text = { channel: 'msgapp', to: user, type: 'message', message: { text: 'Hello!' } };
      const post = () =>
        fetch(`${base}/api/channels/send`, {
          method: 'POST',
          headers: { ...tenant.agentKey.auth, 'content-type': 'application/json' },
          body: JSON.stringify(text),
        });
      expect((await post()).status).toBe(400);
      // --from is checked before anything is sent.
      // The refusals at once: none depends on another.
      const [blank, ...refusals] = await Promise.all([
        runCli(['sandbox', 'inbound', '--agent', tenant.agent.id, '--from', user, '--text', ' '], t.env),
        ...['4155550100', 'hello', '+14155550100 ext. 5'].map((from) =>
          runCli(['sandbox', 'inbound', '--agent', tenant.agent.id, '--from', from, '--text', 'Hi'], t.env),
        ),
      ]);
      for (const refused of refusals) {
        expect(refused.code).toBe(1);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toMatch(
          /^parley: --from must be a phone number (in international format|without an extension)/,
        );
      }
      expect(blank.code).toBe(1);
      expect(blank.stderr).toBe('parley: --text must not be empty\n');
      expect(
        await t.ctx.db.selectFrom('inbound_messages').select('from_phone').where('from_phone', '=', user).execute(),
      ).toEqual([]);

      const inbound = await runCli(
        ['sandbox', 'inbound', '--agent', tenant.agent.id, '--from', user, '--text', 'Hi', '--json'],
        t.env,
      );
      expect(inbound.code).toBe(0);
      expect(inbound.json()).toMatchObject({
        messageId: expect.stringMatching(/^wamid\./),
        from: user,
        windowOpen: true,
      });
      // It answered once the webhook was applied: the window is open now, not eventually.
      expect((await post()).status).toBe(200);
      const plain = await runCli(
        ['sandbox', 'inbound', '--agent', tenant.agent.id, '--from', user, '--text', 'Again'],
        t.env,
      );
      // The agent has no hook: said, rather than leaving the user to wonder why no bot answers.
      expect(plain.stdout).toMatch(
        /^delivered wamid\.\S+ from \+\d+ to \+\d+; the 24-hour window is open \(conversation cnv_\S+\)\nno bot heard it: agent agt_\S+ has no hook\. Make one with `npx parley endpoint create .+`.*\n$/,
      );
      const doc = (await (await fetch(`${base}/api/openapi.json`)).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining([
          '/api/channels/send',
          '/api/messages/{messageId}',
          '/api/sandbox/inbound',
          '/webhooks/msgapp',
        ]),
      );
    } finally {
      await server.stop();
    }
    const gone = await runCli(
      ['sandbox', 'inbound', '--agent', tenant.agent.id, '--from', randomPhone(), '--text', 'x'],
      t.env,
    );
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/no running sandbox/);
  }, 120_000);

  it('documents every messaging route in /api/openapi.json', () => {
    const doc = openApiDocument(t.app);
    expect(doc.paths['/api/channels/send']?.post?.responses).toHaveProperty('502');
    expect(doc.paths['/api/messages/{messageId}']?.get?.responses).toHaveProperty('404');
    expect(doc.paths['/webhooks/msgapp']?.post?.responses).toHaveProperty('401');
    expect(doc.paths['/webhooks/msgapp']?.get).toBeDefined();
  });
});
