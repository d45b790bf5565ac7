/**
 * Every inbound kind, from the sandbox (or a signed provider webhook) to the stored message, the
 * signed `message.received` a real receiver gets, the conversation history and `GET /api/media`;
 * on SQLite with the folder store and on PostgreSQL with the S3 store (a real S3-speaking server).
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, PG_URL, type TestDialect } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { fetchBytes, pngOf, sha256Of } from '../helpers/media.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  postWebhook,
  randomPhone,
} from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { until } from '../helpers/wait.js';

const FAST = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50,50',
  PARLEY_JOB_POLL_MS: '20',
  PARLEY_MEDIA_DOWNLOAD_RETRY_DELAYS_MS: '50,50',
  PARLEY_MEDIA_SWEEP_MS: '200',
};

interface Received {
  type: string;
  data: Record<string, unknown> & { media?: Record<string, unknown> };
}

/** SQLite with the folder store; PostgreSQL with S3 (or SQLite with S3 when no PostgreSQL is at hand). */
const CASES: [TestDialect, 'folder' | 's3'][] = PG_URL
  ? DIALECTS.map((d) => [d, d === 'postgres' ? 's3' : 'folder'])
  : [
      ['sqlite', 'folder'],
      ['sqlite', 's3'],
    ];

describe.each(CASES)('inbound messages of every kind (%s, %s store)', (dialect, store) => {
  let t: MessagingTestApp;
  let s3: TestS3 | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let x: Awaited<ReturnType<typeof tenantWithHook>>;

  async function tenantWithHook() {
    const tenant = await makeSendingTenant(t.ctx);
    const where = `/hook-${randomBase62(8)}`;
    const hook = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      url: `${receiver.url}${where}`,
      agentId: tenant.agent.id,
    });
    return { ...tenant, where, hook };
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    if (store === 's3') s3 = await startS3();
    t = await createMessagingApp(dialect, { env: { ...FAST, ...s3?.env } });
    expect(t.ctx.mediaStore.kind).toBe(store);
    x = await tenantWithHook();
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
    await receiver.close();
  });

  /** The user writes in through the sandbox API; resolves with the signed event the hook received. */
  async function inbound(
    body: Record<string, unknown>,
    from = randomPhone(),
  ): Promise<{ messageId: string; event: Received }> {
    const res = await call(t, {
      method: 'POST',
      url: '/api/sandbox/inbound',
      headers: x.agentKey.auth,
      payload: { from, ...body },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { messageId } = res.json() as { messageId: string };
    return { messageId, event: await eventOf(messageId) };
  }

  /** The one `message.received` of a message, its signature checked. */
  async function eventOf(messageId: string): Promise<Received> {
    const mine = () =>
      receiver.received.filter((r) => {
        const body = JSON.parse(r.body) as Received;
        return r.path === x.where && body.type === 'message.received' && body.data.messageId === messageId;
      });
    await until(() => mine().length > 0, `message.received of ${messageId}`);
    const [delivered] = mine();
    const verified = new Webhook(x.hook.secret).verify(delivered?.body ?? '', {
      'webhook-id': String(delivered?.headers['webhook-id']),
      'webhook-timestamp': String(delivered?.headers['webhook-timestamp']),
      'webhook-signature': String(delivered?.headers['webhook-signature']),
    }) as Received;
    expect(verified.type).toBe('message.received');
    return verified;
  }

  /** The event's `media.url`, on the address this test app listens at (its base address is the configured one). */
  const here = (event: Received) => `${t.url}${new URL(String(event.data.media?.url)).pathname}`;

  const history = async (conversationId: string) => {
    const res = await call(t, {
      method: 'GET',
      url: `/api/conversations/${conversationId}/messages`,
      headers: x.orgKey.auth,
    });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { data: Record<string, unknown>[] }).data;
  };

  it('an image with a caption, replying to a message: stored, its event carries the file, GET /api/media serves it', async () => {
    const png = pngOf(64, 48, [220, 80, 40]);
    const { messageId, event } = await inbound({
      image: { data: png.toString('base64'), mimeType: 'image/png' },
      text: 'The parcel arrived like this',
      replyTo: 'wamid.earlier',
    });
    const mediaId = String(event.data.media?.id);
    expect(event.data).toEqual({
      conversationId: expect.stringMatching(/^cnv_/),
      agentId: x.agent.id,
      endUserId: expect.stringMatching(/^eu_/),
      from: expect.stringMatching(/^\+1650/),
      messageId,
      type: 'image',
      text: 'The parcel arrived like this',
      media: {
        id: expect.stringMatching(/^med_/),
        mimeType: 'image/png',
        size: png.length,
        sha256: sha256Of(png),
        available: true,
        url: `${t.ctx.region.baseUrl}/api/media/${mediaId}`,
      },
      replyTo: 'wamid.earlier',
    });

    // The event's address, with the agent's own key: the bytes, as stored.
    const got = await fetchBytes(here(event), x.agentKey.auth);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(png)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('content-length')).toBe(String(png.length));
    expect(got.headers.get('etag')).toBe(`"${sha256Of(png)}"`);
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-disposition')).toBe(`inline; filename="${mediaId}.png"`);

    // The conversation history shows it.
    const items = await history(String(event.data.conversationId));
    expect(items.find((m) => m.id === messageId)).toMatchObject({
      direction: 'inbound',
      type: 'message',
      inboundType: 'image',
      text: 'The parcel arrived like this',
      media: { id: mediaId, mimeType: 'image/png', size: png.length, sha256: sha256Of(png), available: true },
      replyTo: 'wamid.earlier',
    });

    // Another agent's key, another organization's key: absent, with the same sentence.
    const other = await fetchBytes(`${t.url}/api/media/${mediaId}`, x.otherKey.auth);
    const stranger = await makeTenant(t.ctx);
    const foreign = await fetchBytes(`${t.url}/api/media/${mediaId}`, stranger.orgKey.auth);
    const unknown = await fetchBytes(`${t.url}/api/media/med_${randomBase62(22)}`, x.orgKey.auth);
    for (const res of [other, foreign]) {
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text())).toEqual({
        success: false,
        error: `No media with ID '${mediaId}' in this organization.`,
      });
    }
    expect(unknown.status).toBe(404);
    expect((await fetchBytes(`${t.url}/api/media/${mediaId}`)).status).toBe(401);
    // The organization's key reads it too.
    expect((await fetchBytes(`${t.url}/api/media/${mediaId}`, x.orgKey.auth)).status).toBe(200);
  });

  it('a document is an attachment with its name; a voice note says so; video and sticker are kept too', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(20_000)]);
    const doc = await inbound({
      document: { data: pdf.toString('base64'), mimeType: 'application/pdf', filename: 'facture 1042 é.pdf' },
    });
    expect(doc.event.data).toMatchObject({
      type: 'document',
      text: null,
      media: { mimeType: 'application/pdf', size: pdf.length, filename: 'facture 1042 é.pdf', available: true },
    });
    const got = await fetchBytes(here(doc.event), x.orgKey.auth);
    expect(got.bytes.equals(pdf)).toBe(true);
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="facture 1042 _.pdf"; filename*=UTF-8''${encodeURIComponent('facture 1042 é.pdf')}`,
    );

    const ogg = Buffer.concat([Buffer.from('OggS'), randomBytes(3000)]);
    const voice = await inbound({ audio: { data: ogg.toString('base64'), mimeType: 'audio/ogg' } });
    expect(voice.event.data).toMatchObject({
      type: 'audio',
      text: null,
      media: { mimeType: 'audio/ogg', voice: true, available: true },
    });
    const audio = await fetchBytes(here(voice.event), x.orgKey.auth);
    expect(audio.headers.get('content-disposition')).toMatch(/^attachment; filename="med_\w+\.ogg"/);

    for (const [kind, mimeType] of [
      ['video', 'video/mp4'],
      ['sticker', 'image/webp'],
    ] as const) {
      const bytes = randomBytes(5000);
      const { event } = await inbound({ [kind]: { data: bytes.toString('base64'), mimeType } });
      expect(event.data).toMatchObject({
        type: kind,
        media: { mimeType, size: bytes.length, sha256: sha256Of(bytes), available: true },
      });
      expect((await fetchBytes(here(event), x.agentKey.auth)).bytes.equals(bytes)).toBe(true);
    }
  });

  it('a location, a button reply, a list reply, a reaction and text each arrive as what they are', async () => {
    const from = randomPhone();
    const loc = await inbound({ location: { latitude: 38.7223, longitude: -9.1393, name: 'Lisbon office' } }, from);
    expect(loc.event.data).toMatchObject({
      type: 'location',
      text: null,
      location: { latitude: 38.7223, longitude: -9.1393, name: 'Lisbon office' },
    });
    expect(loc.event.data.media).toBeUndefined();
    const button = await inbound({ buttonReply: { id: 'refund', title: 'Refund' } }, from);
    expect(button.event.data).toMatchObject({
      type: 'interactive',
      reply: { kind: 'button', id: 'refund', title: 'Refund' },
    });
    const row = await inbound({ listReply: { id: 'slot-9', title: 'Tomorrow 9:00', description: 'Morning' } }, from);
    expect(row.event.data).toMatchObject({
      type: 'interactive',
      reply: { kind: 'list', id: 'slot-9', title: 'Tomorrow 9:00', description: 'Morning' },
    });
    const reaction = await inbound({ reaction: { messageId: loc.messageId, emoji: '👍' } }, from);
    expect(reaction.event.data).toMatchObject({
      type: 'reaction',
      reaction: { messageId: loc.messageId, emoji: '👍' },
    });
    const text = await inbound({ text: 'Thanks!', replyTo: row.messageId }, from);
    expect(text.event.data).toMatchObject({ type: 'text', text: 'Thanks!', replyTo: row.messageId });

    const items = await history(String(loc.event.data.conversationId));
    const byId = new Map(items.map((m) => [m.id, m]));
    expect(byId.get(loc.messageId)).toMatchObject({
      inboundType: 'location',
      location: { latitude: 38.7223, longitude: -9.1393 },
    });
    expect(byId.get(button.messageId)).toMatchObject({
      inboundType: 'interactive',
      reply: { kind: 'button', id: 'refund' },
    });
    expect(byId.get(row.messageId)).toMatchObject({ reply: { kind: 'list', id: 'slot-9', title: 'Tomorrow 9:00' } });
    expect(byId.get(reaction.messageId)).toMatchObject({ inboundType: 'reaction', reaction: { emoji: '👍' } });
    expect(byId.get(text.messageId)).toMatchObject({ inboundType: 'text', text: 'Thanks!', replyTo: row.messageId });
  });

  it('contacts, a template quick reply and a kind Parley does not know, from a provider webhook; a file the provider no longer has is marked unavailable and the event still goes out', async () => {
    const from = randomPhone();
    const item = (id: string, rest: Record<string, unknown>) => ({
      from: from.slice(1),
      id,
      timestamp: String(Math.floor(Date.now() / 1000)),
      ...rest,
    });
    const ids = {
      contacts: `wamid.c${randomBase62(10)}`,
      button: `wamid.b${randomBase62(10)}`,
      order: `wamid.o${randomBase62(10)}`,
      image: `wamid.i${randomBase62(10)}`,
    };
    const res = await postWebhook(t, {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'waba',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: x.number.phone.slice(1), phone_number_id: x.number.phoneNumberId },
                contacts: [{ profile: { name: 'Ana' }, wa_id: from.slice(1) }],
                messages: [
                  item(ids.contacts, {
                    type: 'contacts',
                    contacts: [
                      {
                        name: { formatted_name: 'Rui Costa' },
                        phones: [{ phone: '+351 912 345 678', type: 'CELL', wa_id: '351912345678' }],
                      },
                    ],
                  }),
                  item(ids.button, { type: 'button', button: { payload: 'stop-promos', text: 'Stop promotions' } }),
                  item(ids.order, { type: 'order', order: { catalog_id: '1' } }),
                  item(ids.image, { type: 'image', image: { id: '99999999', mime_type: 'image/jpeg', sha256: 'x' } }),
                ],
              },
            },
          ],
        },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect((await eventOf(ids.contacts)).data).toMatchObject({
      type: 'contacts',
      contacts: [
        { name: 'Rui Costa', phones: [{ phone: '+351 912 345 678', type: 'CELL', waId: '351912345678' }], emails: [] },
      ],
    });
    expect((await eventOf(ids.button)).data).toMatchObject({
      type: 'button',
      reply: { kind: 'button', id: 'stop-promos', title: 'Stop promotions' },
    });
    expect((await eventOf(ids.order)).data).toMatchObject({ type: 'unsupported', text: null });
    const image = await eventOf(ids.image);
    expect(image.data).toMatchObject({ type: 'image', media: { mimeType: 'image/jpeg', available: false } });
    const gone = await fetchBytes(here(image), x.orgKey.auth);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.text()).error).toMatch(
      /^Media 'med_\w+' is not available: the provider answered 400: \(#100\)/,
    );
  });

  it('media past its retention is deleted by the scheduled sweep; its address then says so', async () => {
    const bytes = pngOf(8, 8, [0, 0, 255]);
    const { event } = await inbound({ image: { data: bytes.toString('base64'), mimeType: 'image/png' } });
    const mediaId = String(event.data.media?.id);
    const row = await t.ctx.db
      .selectFrom('media')
      .select('storage_key')
      .where('id', '=', mediaId)
      .executeTakeFirstOrThrow();
    const key = String(row.storage_key);
    expect(await t.ctx.mediaStore.get(key)).toBeDefined();
    // 31 days old.
    await t.ctx.db
      .updateTable('media')
      .set({ created_at: Date.now() - 31 * 86_400_000 })
      .where('id', '=', mediaId)
      .execute();
    await until(async () => {
      const r = await t.ctx.db.selectFrom('media').select('state').where('id', '=', mediaId).executeTakeFirst();
      return r?.state === 'deleted';
    }, 'the sweep to delete the file');
    expect(await t.ctx.mediaStore.get(key)).toBeUndefined();
    const res = await fetchBytes(here(event), x.agentKey.auth);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text())).toEqual({
      success: false,
      error: `Media '${mediaId}' was deleted: files are kept 30 days (PARLEY_MEDIA_RETENTION_DAYS).`,
    });
    const items = await history(String(event.data.conversationId));
    expect(items.find((m) => m.id === event.data.messageId)).toMatchObject({
      media: { id: mediaId, available: false },
    });
  });

  it('refuses a file the provider would refuse, two kinds at once, and text beside a location, naming the field', async () => {
    const post = (body: Record<string, unknown>) =>
      call(t, {
        method: 'POST',
        url: '/api/sandbox/inbound',
        headers: x.agentKey.auth,
        payload: { from: randomPhone(), ...body },
      });
    const cases: [Record<string, unknown>, string][] = [
      [
        { image: { data: 'aGVsbG8=', mimeType: 'image/gif' } },
        "'image.mimeType' must be one of image/jpeg, image/png; got 'image/gif'.",
      ],
      [
        { image: { data: 'aGVsbG8=', mimeType: 'image/png' }, location: { latitude: 1, longitude: 2 } },
        "Give one kind of message, not 'image' and 'location'.",
      ],
      [{ text: 'here', location: { latitude: 1, longitude: 2 } }, "'text' cannot go with 'location'."],
      [
        { sticker: { data: randomBytes(600 * 1024).toString('base64'), mimeType: 'image/webp' } },
        `'sticker' is ${600 * 1024} bytes; the provider takes at most ${500 * 1024} for stickers.`,
      ],
      [
        {},
        "Give 'text' or one of 'image', 'video', 'audio', 'document', 'sticker', 'location', 'buttonReply', 'listReply', 'reaction'.",
      ],
    ];
    for (const [body, error] of cases) {
      const res = await post(body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json()).toEqual({ success: false, error });
    }
  });
});
