/**
 * POST /api/media through real HTTP on each database: what is accepted (the bytes decide the
 * type), what is refused (a mismatch 400, over the type's limit 413) with nothing kept, who may
 * read and send an upload, and a send naming it: uploaded to the provider for the number once and
 * the provider's media ID reused.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, PG_URL, type TestDialect } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { call } from '../helpers/http.js';
import { pngOf, sha256Of } from '../helpers/media.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { multipartBody, pdfBytes } from '../helpers/multipart.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { sandboxLog, sentPayloads } from '../helpers/sandbox-log.js';

/** SQLite with the folder store; PostgreSQL with S3 (a real S3-speaking server), or SQLite with it when no PostgreSQL is at hand. */
const CASES: [TestDialect, 'folder' | 's3'][] = PG_URL
  ? DIALECTS.map((d) => [d, d === 'postgres' ? 's3' : 'folder'])
  : [
      ['sqlite', 'folder'],
      ['sqlite', 's3'],
    ];

describe.each(CASES)('POST /api/media (%s, %s store)', (dialect, store) => {
  let t: MessagingTestApp;
  let s3: TestS3 | undefined;
  let x: Awaited<ReturnType<typeof makeSendingTenant>>;
  let stranger: Awaited<ReturnType<typeof makeSendingTenant>>;
  const user = randomPhone();

  beforeAll(async () => {
    if (store === 's3') s3 = await startS3();
    t = await createMessagingApp(dialect, { env: { ...s3?.env } });
    expect(t.ctx.mediaStore.kind).toBe(store);
    x = await makeSendingTenant(t.ctx);
    stranger = await makeSendingTenant(t.ctx);
    expect((await sandboxInbound(t, x.agentKey.auth, user, 'hello')).statusCode).toBe(200);
    await t.settle();
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
  });

  const upload = (auth: Record<string, string>, file: Parameters<typeof multipartBody>[0]) => {
    const { body, headers } = multipartBody(file);
    return call(t, { method: 'POST', url: '/api/media', headers: { ...auth, ...headers }, payload: body });
  };

  /** The organization's media rows and the files the store holds for it (its folder, or its keys in the bucket). */
  async function kept(orgId: string) {
    const rows = await t.ctx.db.selectFrom('media').select('id').where('org_id', '=', orgId).execute();
    if (s3) {
      const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
      const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
      client.destroy();
      const files = (listed.Contents ?? []).filter((o) => o.Key?.includes(`/${orgId}/`));
      return { rows: rows.length, files: files.length };
    }
    let files: string[] = [];
    try {
      files = readdirSync(join(t.ctx.mediaStore.where, orgId));
    } catch {
      files = [];
    }
    return { rows: rows.length, files: files.length };
  }

  const send = (auth: Record<string, string>, message: Record<string, unknown>) =>
    call(t, {
      method: 'POST',
      url: '/api/channels/send',
      headers: auth,
      payload: { channel: 'msgapp', to: user, type: 'message', message, convId: x.agent.id },
    });

  it('a PNG: 201 with its ID, type, size, SHA-256 and name; GET /api/media serves the same bytes', async () => {
    const before = await kept(x.org.id);
    const png = pngOf(32, 32, [10, 120, 200]);
    const res = await upload(x.orgKey.auth, { bytes: png, type: 'image/png', filename: 'C:\\photos\\parcel.png' });
    expect(res.statusCode, res.body).toBe(201);
    expect(await kept(x.org.id)).toEqual({ rows: before.rows + 1, files: before.files + 1 });
    expectMatchesContract(t.app, 'POST', '/api/media', res);
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^med_/),
      mimeType: 'image/png',
      size: png.length,
      sha256: sha256Of(png),
      filename: 'parcel.png',
    });
    const got = await call(t, { method: 'GET', url: `/api/media/${res.json().id}`, headers: x.orgKey.auth });
    expect(got.statusCode).toBe(200);
    expect(got.headers['content-type']).toBe('image/png');
    expect(got.headers.etag).toBe(`"${sha256Of(png)}"`);
  });

  it('a PDF declared as nothing in particular, and plain text: the bytes decide', async () => {
    const pdf = await upload(x.orgKey.auth, { bytes: pdfBytes(), type: 'application/octet-stream', filename: 'a.pdf' });
    expect(pdf.statusCode, pdf.body).toBe(201);
    expect(pdf.json().mimeType).toBe('application/pdf');
    const txt = await upload(x.orgKey.auth, { bytes: Buffer.from('Order A-1042: 2 items\n'), type: 'text/plain' });
    expect(txt.statusCode, txt.body).toBe(201);
    expect(txt.json().mimeType).toBe('text/plain');
  });

  it('bytes that are not the declared type: 400, nothing kept', async () => {
    const before = await kept(x.org.id);
    const res = await upload(x.orgKey.auth, { bytes: pdfBytes(), type: 'image/png', filename: 'x.png' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      success: false,
      error: "The file's bytes are not image/png (they are application/pdf): the bytes decide the type.",
    });
    expectMatchesContract(t.app, 'POST', '/api/media', res);
    expect(await kept(x.org.id)).toEqual(before);
  });

  it('a type the provider does not take, a body that is not multipart, a file in another field: 400', async () => {
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'binary');
    const odd = await upload(x.orgKey.auth, { bytes: gif, type: 'image/gif' });
    expect(odd.statusCode).toBe(400);
    expect(odd.json().error).toMatch(/^Files of type 'image\/gif' cannot be sent; accepted: image\/jpeg, image\/png/);
    const json = await call(t, { method: 'POST', url: '/api/media', headers: x.orgKey.auth, payload: { file: 'x' } });
    expect(json.statusCode).toBe(400);
    expect(json.json().error).toBe("POST /api/media takes multipart/form-data with the file in the field 'file'.");
    const field = await upload(x.orgKey.auth, { field: 'photo', bytes: pngOf(4, 4, [1, 2, 3]), type: 'image/png' });
    expect(field.statusCode).toBe(400);
    expect(field.json().error).toBe("The file must be in the field 'file', not 'photo'.");
  });

  it('an image over 5 MB: 413, nothing kept', async () => {
    const before = await kept(x.org.id);
    const png = pngOf(16, 16, [0, 0, 0]);
    const big = Buffer.concat([png, Buffer.alloc(5 * 1024 * 1024 + 1 - png.length)]);
    const res = await upload(x.orgKey.auth, { bytes: big, type: 'image/png', filename: 'big.png' });
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json()).toEqual({
      success: false,
      error: 'Files of type image/png may be at most 5 MB; this one is larger.',
    });
    expectMatchesContract(t.app, 'POST', '/api/media', res);
    expect(await kept(x.org.id)).toEqual(before);
  });

  it('a send names the upload: uploaded to the provider for the number once, its media ID reused', async () => {
    const png = pngOf(40, 30, [200, 40, 40]);
    const { id } = (await upload(x.agentKey.auth, { bytes: png, type: 'image/png', filename: 'label.png' })).json();
    const first = await send(x.agentKey.auth, { text: 'Your label', media: { id, kind: 'image' } });
    expect(first.statusCode, first.body).toBe(200);
    const second = await send(x.agentKey.auth, { text: 'Again', media: { id, kind: 'image' } });
    expect(second.statusCode, second.body).toBe(200);
    const [again, once] = await sentPayloads(t, x.agentKey.auth, user);
    const providerId = String((once?.image as { id?: string } | undefined)?.id);
    expect(providerId).toMatch(/^\d+$/);
    expect(once?.image).toEqual({ id: providerId, caption: 'Your label' });
    expect(again?.image).toEqual({ id: providerId, caption: 'Again' });
    // The provider holds the very bytes.
    expect(t.sandbox.media.get(providerId)?.sha256).toBe(sha256Of(png));
    const history = await call(t, {
      method: 'GET',
      url: `/api/conversations/${first.json().conversationId}/messages`,
      headers: x.orgKey.auth,
    });
    const item = history.json().data.find((m: { messageId: string }) => m.messageId === first.json().messageId);
    expect(item.media).toEqual({ id, kind: 'image' });
  });

  it('a document keeps its uploaded name on the wire', async () => {
    const { id } = (
      await upload(x.orgKey.auth, { bytes: pdfBytes(), type: 'application/pdf', filename: 'invoice.pdf' })
    ).json();
    const res = await send(x.orgKey.auth, { text: 'Invoice', media: { id, kind: 'document' } });
    expect(res.statusCode, res.body).toBe(200);
    const [entry] = await sandboxLog(t, x.orgKey.auth, { to: user, limit: 1 });
    expect(entry?.payload.document).toEqual({
      id: expect.stringMatching(/^\d+$/),
      caption: 'Invoice',
      filename: 'invoice.pdf',
    });
  });

  it("another organization's file, another agent's upload, a file of another kind: 400 naming the field, nothing sent", async () => {
    const theirs = (await upload(stranger.orgKey.auth, { bytes: pngOf(4, 4, [9, 9, 9]), type: 'image/png' })).json().id;
    const others = (await upload(x.otherKey.auth, { bytes: pngOf(4, 4, [8, 8, 8]), type: 'image/png' })).json().id;
    const pdf = (await upload(x.orgKey.auth, { bytes: pdfBytes(), type: 'application/pdf' })).json().id;
    const before = (await sentPayloads(t, x.orgKey.auth, user)).length;
    const a = await send(x.orgKey.auth, { text: 'x', media: { id: theirs, kind: 'image' } });
    expect(a.statusCode).toBe(400);
    expect(a.json().error).toBe(`'message.media.id': no media with ID '${theirs}' in this organization.`);
    const b = await send(x.agentKey.auth, { text: 'x', media: { id: others, kind: 'image' } });
    expect(b.statusCode).toBe(400);
    expect(b.json().error).toBe(`'message.media.id': no media with ID '${others}' in this organization.`);
    const c = await send(x.orgKey.auth, { text: 'x', media: { id: pdf, kind: 'image' } });
    expect(c.statusCode).toBe(400);
    expect(c.json().error).toBe(
      `'message.media.kind' is 'image', but media '${pdf}' is application/pdf, which cannot be sent as an image.`,
    );
    expect((await sentPayloads(t, x.orgKey.auth, user)).length).toBe(before);
    // Reading them is 404 as if absent.
    expect((await call(t, { method: 'GET', url: `/api/media/${theirs}`, headers: x.orgKey.auth })).statusCode).toBe(
      404,
    );
    expect((await call(t, { method: 'GET', url: `/api/media/${others}`, headers: x.agentKey.auth })).statusCode).toBe(
      404,
    );
  });

  describe('a template with an image header (promo_image)', () => {
    const promo = (auth: Record<string, string>, to: string, template: Record<string, unknown>) =>
      call(t, {
        method: 'POST',
        url: '/api/channels/send',
        headers: auth,
        payload: {
          channel: 'msgapp',
          to,
          type: 'template',
          convId: x.agent.id,
          template: { name: 'promo_image', language: 'en_US', parameters: { body: ['Ada'] }, ...template },
        },
      });

    it('headerMedia by ID: the header parameter is the uploaded image; the history shows it', async () => {
      const to = randomPhone();
      const { id } = (await upload(x.orgKey.auth, { bytes: pngOf(8, 8, [1, 200, 1]), type: 'image/png' })).json();
      const res = await promo(x.orgKey.auth, to, { headerMedia: { id, kind: 'image' } });
      expect(res.statusCode, res.body).toBe(200);
      const [payload] = await sentPayloads(t, x.orgKey.auth, to);
      expect(payload?.template).toEqual({
        name: 'promo_image',
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'image', image: { id: expect.stringMatching(/^\d+$/) } }] },
          { type: 'body', parameters: [{ type: 'text', text: 'Ada' }] },
        ],
      });
      const history = await call(t, {
        method: 'GET',
        url: `/api/conversations/${res.json().conversationId}/messages`,
        headers: x.orgKey.auth,
      });
      expect(history.json().data[0].template).toEqual({
        name: 'promo_image',
        language: 'en_US',
        parameters: { body: ['Ada'], header: [] },
        headerMedia: { id, kind: 'image' },
      });
    });

    it('headerMedia by link goes out as a link', async () => {
      const to = randomPhone();
      const res = await promo(x.agentKey.auth, to, {
        headerMedia: { link: 'https://example.com/sale.jpg', kind: 'image' },
      });
      expect(res.statusCode, res.body).toBe(200);
      const [payload] = await sentPayloads(t, x.agentKey.auth, to);
      expect((payload?.template as { components?: unknown[] } | undefined)?.components?.[0]).toEqual({
        type: 'header',
        parameters: [{ type: 'image', image: { link: 'https://example.com/sale.jpg' } }],
      });
    });

    it('refused: header parameters beside headerMedia (400, nothing sent); no header file, or a file of another kind (the provider)', async () => {
      const to = randomPhone();
      const both = await promo(x.orgKey.auth, to, {
        parameters: { header: ['Hi'], body: ['Ada'] },
        headerMedia: { link: 'https://example.com/a.jpg', kind: 'image' },
      });
      expect(both.statusCode).toBe(400);
      expect(both.json().error).toMatch(/^'template.parameters.header' must be empty with 'template.headerMedia'/);
      const noLink = await promo(x.orgKey.auth, to, { headerMedia: { kind: 'image' } });
      expect(noLink.statusCode).toBe(400);
      expect(noLink.json().error).toMatch(/^'template.headerMedia' needs exactly one of 'id'/);
      expect(await sentPayloads(t, x.orgKey.auth, to)).toEqual([]);

      const none = await promo(x.orgKey.auth, to, {});
      expect(none.statusCode).toBe(400);
      expect(none.json().error).toMatch(/number of template parameters does not match/);
      const video = await promo(x.orgKey.auth, to, {
        headerMedia: { link: 'https://example.com/a.mp4', kind: 'video' },
      });
      expect(video.statusCode).toBe(400);
      expect(video.json().error).toMatch(/code 132012/);
    });
  });
});
