/**
 * Sends that carry more than text (a file by address, reply buttons, a list, a quoted message),
 * through real HTTP on each database: what reached the provider (the sandbox's log of exact Cloud
 * API bodies), what the history shows, and every broken rule's 400 with nothing sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { call, type HttpResponse } from '../helpers/http.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { sandboxLog, sentPayloads } from '../helpers/sandbox-log.js';

const BUTTONS = [
  { id: 'refund', title: 'Refund' },
  { id: 'replace', title: 'Send a new one' },
];
const LIST = {
  button: 'Choose a slot',
  sections: [
    {
      title: 'Tomorrow',
      rows: [
        { id: 'am', title: '09:00', description: 'Morning' },
        { id: 'pm', title: '14:00' },
      ],
    },
    { title: 'Friday', rows: [{ id: 'fri', title: '10:00' }] },
  ],
};

describe.each(DIALECTS)('rich sends (%s)', (dialect) => {
  let t: MessagingTestApp;
  let x: Awaited<ReturnType<typeof makeSendingTenant>>;
  /** A user who wrote in (the window is open), and the ID of what they wrote. */
  let user: string;
  let inboundId: string;

  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    x = await makeSendingTenant(t.ctx);
    user = randomPhone();
    const res = await sandboxInbound(t, x.agentKey.auth, user, 'My parcel is broken');
    expect(res.statusCode, res.body).toBe(200);
    inboundId = res.json<{ messageId: string }>().messageId;
    await t.settle();
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = (message: Record<string, unknown>, to = user) =>
    call(t, {
      method: 'POST',
      url: '/api/channels/send',
      headers: x.agentKey.auth,
      payload: { channel: 'msgapp', to, type: 'message', message },
    });

  async function history(conversationId: string) {
    const res = await call(t, {
      method: 'GET',
      url: `/api/conversations/${conversationId}/messages`,
      headers: x.orgKey.auth,
    });
    expect(res.statusCode, res.body).toBe(200);
    expectMatchesContract(t.app, 'GET', '/api/conversations/{id}/messages', res);
    return res.json<{ data: Record<string, unknown>[] }>().data;
  }

  async function sent(res: HttpResponse) {
    expect(res.statusCode, res.body).toBe(200);
    const { messageId, conversationId } = res.json<{ messageId: string; conversationId: string }>();
    const [entry] = await sandboxLog(t, x.agentKey.auth, { to: user, limit: 1 });
    expect(entry?.messageId).toBe(messageId);
    const items = await history(conversationId);
    const item = items.find((m) => m.messageId === messageId);
    return { payload: entry?.payload, item, messageId };
  }

  const common = (callback: string | undefined) => ({
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: user,
    biz_opaque_callback_data: callback,
  });

  it('an image by address with a caption, quoting the user: the Cloud API image message with context', async () => {
    const out = await sent(
      await send({
        text: 'Is this the parcel?',
        media: { link: 'https://example.com/parcel.jpg', kind: 'image' },
        replyTo: inboundId,
      }),
    );
    expect(out.payload).toEqual({
      ...common(String(out.item?.id)),
      context: { message_id: inboundId },
      type: 'image',
      image: { link: 'https://example.com/parcel.jpg', caption: 'Is this the parcel?' },
    });
    expect(out.item).toMatchObject({
      direction: 'outbound',
      type: 'message',
      text: 'Is this the parcel?',
      media: { link: 'https://example.com/parcel.jpg', kind: 'image' },
      replyTo: inboundId,
    });
  });

  it('a document by address keeps its file name', async () => {
    const out = await sent(
      await send({
        text: 'Your invoice',
        media: { link: 'https://example.com/i.pdf', kind: 'document', filename: 'invoice A-1.pdf' },
      }),
    );
    expect(out.payload).toMatchObject({
      type: 'document',
      document: { link: 'https://example.com/i.pdf', caption: 'Your invoice', filename: 'invoice A-1.pdf' },
    });
  });

  it('reply buttons: an interactive button message, shown in the history as sent', async () => {
    const out = await sent(await send({ text: 'What would you like us to do?', buttons: BUTTONS }));
    expect(out.payload).toEqual({
      ...common(String(out.item?.id)),
      type: 'interactive',
      interactive: {
        type: 'button',
        body: { text: 'What would you like us to do?' },
        action: {
          buttons: [
            { type: 'reply', reply: { id: 'refund', title: 'Refund' } },
            { type: 'reply', reply: { id: 'replace', title: 'Send a new one' } },
          ],
        },
      },
    });
    expect(out.item).toMatchObject({ text: 'What would you like us to do?', buttons: BUTTONS });
  });

  it('a list: an interactive list message, shown in the history as sent', async () => {
    const out = await sent(await send({ text: 'When can we collect it?', list: LIST }));
    expect(out.payload).toEqual({
      ...common(String(out.item?.id)),
      type: 'interactive',
      interactive: {
        type: 'list',
        body: { text: 'When can we collect it?' },
        action: LIST,
      },
    });
    expect(out.item).toMatchObject({ text: 'When can we collect it?', list: LIST });
  });

  it('the dashboard shows what a send carried: the file, the buttons, the list', async () => {
    const [buttons, list, media] = [
      await send({ text: 'Pick', buttons: BUTTONS }),
      await send({ text: 'Slots', list: LIST }),
      await send({
        text: 'Invoice',
        media: { link: 'https://example.com/i.pdf', kind: 'document', filename: 'i.pdf' },
      }),
    ];
    expect([buttons.statusCode, list.statusCode, media.statusCode]).toEqual([200, 200, 200]);
    const user = await makeUser(t.ctx, x.org.id);
    const session = await signInAs(t.app, user.email);
    const page = await session.get(`/dashboard/conversations/${buttons.json().conversationId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Sent with the buttons “Refund”, “Send a new one”');
    expect(page.body).toContain('Sent with the list “Choose a slot”: 09:00, 14:00, 10:00');
    expect(page.body).toContain('Sent with a document: i.pdf');
  });

  const long = (n: number) => 'x'.repeat(n);
  const rows = (n: number, prefix = 'r') =>
    Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, title: `Row ${i}` }));
  const BROKEN: [string, Record<string, unknown>, RegExp][] = [
    [
      'two of media, buttons and list',
      { text: 'x', buttons: BUTTONS, list: LIST },
      /at most one of 'media', 'buttons' and 'list'/,
    ],
    [
      'a caption over 1,024',
      { text: long(1025), media: { link: 'https://e.com/a.jpg', kind: 'image' } },
      /'message.text' holds 1025 characters; with 'media'.*1024/,
    ],
    ['a button body over 1,024', { text: long(1025), buttons: BUTTONS }, /'message.text' holds 1025 .*'buttons'/],
    [
      'media with neither id nor link',
      { text: 'x', media: { kind: 'image' } },
      /'message.media' needs exactly one of 'id'/,
    ],
    [
      'media with both id and link',
      { text: 'x', media: { kind: 'image', id: 'med_a', link: 'https://e.com/a' } },
      /exactly one of 'id'/,
    ],
    [
      'a link that is not http(s)',
      { text: 'x', media: { kind: 'image', link: 'ftp://e.com/a.jpg' } },
      /'message.media.link' must be an http\(s\) address/,
    ],
    [
      'an unknown kind',
      { text: 'x', media: { kind: 'audio', link: 'https://e.com/a' } },
      /'message.media.kind' must be one of "image", "video", "document"/,
    ],
    [
      'a file name on an image',
      { text: 'x', media: { kind: 'image', link: 'https://e.com/a', filename: 'a.jpg' } },
      /'message.media.filename' is for documents only/,
    ],
    ['no buttons', { text: 'x', buttons: [] }, /'message.buttons' must NOT have fewer than 1 items/],
    ['four buttons', { text: 'x', buttons: rows(4) }, /'message.buttons' must NOT have more than 3 items/],
    [
      'a button title over 20',
      { text: 'x', buttons: [{ id: 'a', title: long(21) }] },
      /'message.buttons.0.title' must NOT have more than 20 characters/,
    ],
    [
      'a button ID over 256',
      { text: 'x', buttons: [{ id: long(257), title: 'a' }] },
      /'message.buttons.0.id' must NOT have more than 256 characters/,
    ],
    [
      'an empty button ID',
      { text: 'x', buttons: [{ id: '', title: 'a' }] },
      /'message.buttons.0.id' must NOT have fewer than 1 characters/,
    ],
    [
      'repeated button IDs',
      {
        text: 'x',
        buttons: [
          { id: 'a', title: 'A' },
          { id: 'a', title: 'B' },
        ],
      },
      /'message.buttons.1.id' repeats 'a'/,
    ],
    [
      'a list button over 20',
      { text: 'x', list: { ...LIST, button: long(21) } },
      /'message.list.button' must NOT have more than 20/,
    ],
    [
      'no sections',
      { text: 'x', list: { button: 'b', sections: [] } },
      /'message.list.sections' must NOT have fewer than 1 items/,
    ],
    [
      'eleven sections',
      {
        text: 'x',
        list: {
          button: 'b',
          sections: Array.from({ length: 11 }, (_, i) => ({ title: `S${i}`, rows: rows(1, `s${i}`) })),
        },
      },
      /'message.list.sections' must NOT have more than 10 items/,
    ],
    [
      'eleven rows in all',
      {
        text: 'x',
        list: {
          button: 'b',
          sections: [
            { title: 'A', rows: rows(6, 'a') },
            { title: 'B', rows: rows(5, 'b') },
          ],
        },
      },
      /'message.list.sections' hold 11 rows in all; the most is 10/,
    ],
    [
      'repeated row IDs',
      {
        text: 'x',
        list: {
          button: 'b',
          sections: [
            { title: 'A', rows: rows(1) },
            { title: 'B', rows: rows(1) },
          ],
        },
      },
      /'message.list.sections.1.rows.0.id' repeats 'r0'/,
    ],
    [
      'a row ID over 200',
      { text: 'x', list: { button: 'b', sections: [{ rows: [{ id: long(201), title: 't' }] }] } },
      /'message.list.sections.0.rows.0.id' must NOT have more than 200/,
    ],
    [
      'a row title over 24',
      { text: 'x', list: { button: 'b', sections: [{ rows: [{ id: 'a', title: long(25) }] }] } },
      /'message.list.sections.0.rows.0.title' must NOT have more than 24/,
    ],
    [
      'a description over 72',
      { text: 'x', list: { button: 'b', sections: [{ rows: [{ id: 'a', title: 't', description: long(73) }] }] } },
      /'message.list.sections.0.rows.0.description' must NOT have more than 72/,
    ],
    [
      'a section title over 24',
      { text: 'x', list: { button: 'b', sections: [{ title: long(25), rows: rows(1) }] } },
      /'message.list.sections.0.title' must NOT have more than 24/,
    ],
    [
      'several sections, one untitled',
      { text: 'x', list: { button: 'b', sections: [{ title: 'A', rows: rows(1, 'a') }, { rows: rows(1, 'b') }] } },
      /'message.list.sections.1.title' is required when a list has more than one section/,
    ],
    ['an empty replyTo', { text: 'x', replyTo: '' }, /'message.replyTo' must NOT have fewer than 1 characters/],
    ['an unknown field', { text: 'x', carousel: [] }, /unknown field 'message.carousel'/],
  ];

  it.each(BROKEN)('%s: 400 naming the field, nothing sent', async (_what, message, error) => {
    const before = (await sentPayloads(t, x.agentKey.auth, user)).length;
    const res = await send(message);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ success: false, error: expect.stringMatching(error) });
    expectMatchesContract(t.app, 'POST', '/api/channels/send', res);
    expect((await sentPayloads(t, x.agentKey.auth, user)).length).toBe(before);
  });

  it('the window rule is unchanged: buttons to someone who never wrote are 400, nothing sent', async () => {
    const stranger = randomPhone();
    const res = await send({ text: 'Pick one', buttons: BUTTONS }, stranger);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/has not written to this agent's number in the last 24 hours/);
    expect(await sentPayloads(t, x.agentKey.auth, stranger)).toEqual([]);
  });

  it('the sandbox refuses a malformed interactive or media request with the provider codes', async () => {
    const phoneNumberId = x.number.phoneNumberId;
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(`${t.sandbox.url}/v21.0/${phoneNumberId}/messages`, {
        method: 'POST',
        headers: { authorization: 'Bearer sandbox', 'content-type': 'application/json' },
        body: JSON.stringify({ messaging_product: 'whatsapp', to: user, ...body }),
      });
      return { status: res.status, body: (await res.json()) as { error: { code: number } } };
    };
    const fourButtons = rows(4).map((r) => ({ type: 'reply', reply: r }));
    expect(
      await post({
        type: 'interactive',
        interactive: { type: 'button', body: { text: 'x' }, action: { buttons: fourButtons } },
      }),
    ).toMatchObject({ status: 400, body: { error: { code: 131009 } } });
    expect(await post({ type: 'image', image: { id: '999999999' } })).toMatchObject({
      status: 400,
      body: { error: { code: 131053 } },
    });
    expect(await post({ type: 'image' })).toMatchObject({ status: 400, body: { error: { code: 131008 } } });
    expect(await post({ type: 'document', document: { link: 'file:///etc/passwd' } })).toMatchObject({
      status: 400,
      body: { error: { code: 131009 } },
    });
  });
});
