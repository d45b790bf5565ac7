import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { EVENT_DELIVERY_QUEUE } from '../../src/events/event.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS } from '../helpers/app.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeTrigger } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { syncCatalogue } from '../helpers/policies.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

const ENV = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50,50',
  PARLEY_JOB_POLL_MS: '20',
  PARLEY_SEND_RATE_LIMIT: '6',
  PARLEY_METRICS: 'true',
};

/** Reads a server-sent event stream over a real socket; `events` grows as they come. */
function openStream(url: string, cookie: string) {
  const events: { event: string; data: string }[] = [];
  let status = 0;
  let contentType = '';
  const req = httpRequest(url, { headers: { cookie, accept: 'text/event-stream' } }, (res) => {
    status = res.statusCode ?? 0;
    contentType = String(res.headers['content-type']);
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        if (event) events.push({ event, data: /^data: (.*)$/m.exec(block)?.[1] ?? '' });
        end = buffer.indexOf('\n\n');
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return {
    events,
    status: () => status,
    contentType: () => contentType,
    close: () => req.destroy(),
  };
}

describe.each(DIALECTS)('the inbox pages (%s)', (dialect) => {
  let t: MessagingTestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createMessagingApp(dialect, { env: ENV });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  /** An organization with an agent (a number, no hook: customers go to people), an org endpoint, an owner and a member. */
  async function team() {
    const x = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, x.org.id, x.agent.id, 'order_shipped', 'order_update');
    const orgPath = `/org-${randomBase62(8)}`;
    await createEndpoint(t.ctx, { orgId: x.org.id, url: `${receiver.url}${orgPath}` });
    const owner = await makeUser(t.ctx, x.org.id, 'owner');
    const member = await makeUser(t.ctx, x.org.id, 'member');
    return {
      ...x,
      orgPath,
      owner,
      member,
      asOwner: await signInAs(t.app, owner.email),
      asMember: await signInAs(t.app, member.email),
    };
  }

  /** A customer writes first: with no hook, the conversation goes to people at once. */
  async function customerWrites(x: Awaited<ReturnType<typeof team>>, text = 'I need a person') {
    const phone = randomPhone();
    const res = await sandboxInbound(t, x.agentKey.auth, phone, text);
    expect(res.statusCode, res.body).toBe(200);
    let id = '';
    await until(async () => {
      const list = await call(t, { method: 'GET', url: '/api/conversations?handler=human', headers: x.orgKey.auth });
      const found = (list.json().data as { id: string; endUserId: string }[])[0];
      id = found?.id ?? '';
      return id !== '' && list.json().data.length >= 1;
    }, 'the conversation with people');
    return { phone, id };
  }

  const textsTo = (phone: string) =>
    t.sandbox.received
      .map((r) => r.body as { to?: string; type?: string; text?: { body?: string }; template?: { name?: string } })
      .filter((b) => b.to === phone);

  it('lists conversations with people (Mine, Unassigned, All open), with the waiting count in the navigation', async () => {
    const x = await team();
    const { id } = await customerWrites(x);
    const page = await x.asMember.get('/dashboard/inbox');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1>Inbox</h1>');
    expect(page.body).toContain(`href="/dashboard/inbox/${id}"`);
    expect(page.body).toContain('sse-connect="/dashboard/inbox/stream"');
    expect(page.body).toContain('/dashboard/static/htmx-ext-sse.js');
    // The navigation's count on every page (here: Home).
    const home = await x.asMember.get('/dashboard');
    expect(home.body).toMatch(
      /Inbox<span id="waiting-side" class="waiting-count"> <span class="count" aria-hidden="true">1<\/span>/,
    );
    expect((await x.asMember.get('/dashboard/inbox?view=mine')).body).not.toContain(id);
    expect((await x.asMember.get('/dashboard/inbox?view=unassigned')).body).toContain(id);
    expect((await x.asMember.get('/dashboard/inbox?view=open')).body).toContain(id);
    // The fragment an open page reads again carries the counts out of band.
    const list = await x.asMember.get('/dashboard/inbox/list?view=people', { 'hx-request': 'true' });
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(id);
    expect(list.body).toContain('id="waiting-menu" class="waiting-count" hx-swap-oob="true"');
    // The served SSE extension is the npm package's.
    const ext = await call(t, { method: 'GET', url: '/dashboard/static/htmx-ext-sse.js' });
    expect(ext.statusCode).toBe(200);
    expect(ext.body).toContain('defineExtension("sse"');
  });

  it('a member replies: the text reaches the provider, is stored with who sent it, raises message.sent; a double click sends once', async () => {
    const x = await team();
    const { phone, id } = await customerWrites(x);
    const page = await x.asMember.get(`/dashboard/inbox/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<label for="reply">Reply</label>');
    expect(page.body).toContain('I need a person');
    const key = /name="key" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const form = { _csrf: x.asMember.csrf, key, text: 'Hello, I am Ana. How can I help?' };
    const [first, second] = await Promise.all([
      x.asMember.post(`/dashboard/inbox/${id}/reply`, form, { 'hx-request': 'true' }),
      x.asMember.post(`/dashboard/inbox/${id}/reply`, form, { 'hx-request': 'true' }),
    ]);
    expect(first.statusCode, first.body).toBe(200);
    expect(second.statusCode, second.body).toBe(200);
    expect(first.headers['hx-trigger']).toBe('inbox-refresh');
    // The fresh form has a new key and an empty box.
    expect(first.body).not.toContain(key);
    const sent = textsTo(phone).filter((b) => b.text?.body === 'Hello, I am Ana. How can I help?');
    expect(sent).toHaveLength(1);
    const thread = await call(t, { method: 'GET', url: `/api/conversations/${id}/messages`, headers: x.orgKey.auth });
    const mine = (thread.json().data as { text?: string; sentBy?: unknown }[]).filter(
      (m) => m.text === 'Hello, I am Ana. How can I help?',
    );
    expect(mine).toEqual([
      expect.objectContaining({ sentBy: { type: 'user', id: x.member.id, name: x.member.email } }),
    ]);
    await until(
      () =>
        receiver.received.some(
          (r) => r.path === x.orgPath && JSON.parse(r.body).type === 'message.sent' && r.body.includes(id),
        ),
      'message.sent',
    );
    const event = receiver.received
      .filter((r) => r.path === x.orgPath)
      .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
      .find((e) => e.type === 'message.sent' && e.data.conversationId === id);
    expect(event?.data).toMatchObject({
      conversationId: id,
      agentId: x.agent.id,
      to: phone,
      type: 'message',
      text: 'Hello, I am Ana. How can I help?',
      sentBy: { type: 'user', id: x.member.id, name: x.member.email },
    });
    // Nobody waits any more: the count is gone.
    const home = await x.asMember.get('/dashboard');
    expect(home.body).not.toContain('class="count"');
    // The metrics: the time to this first answer after the handoff, and the conversations waiting.
    const metrics = await call(t, { method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toMatch(/^parley_first_human_reply_seconds_count\{region="us"\} [1-9]\d*$/m);
    expect(metrics.body).toMatch(/^parley_conversations_waiting\{region="us"\} \d+$/m);
    // The thread names who sent it.
    const shown = await x.asOwner.get(`/dashboard/inbox/${id}/thread`, { 'hx-request': 'true' });
    expect(shown.body).toContain(x.member.email);
    // An empty reply is refused beside the form, nothing sent.
    const empty = await x.asMember.post(
      `/dashboard/inbox/${id}/reply`,
      { _csrf: x.asMember.csrf, key: randomBase62(22), text: '   ' },
      { 'hx-request': 'true' },
    );
    expect(empty.body).toContain('role="alert"');
    expect(textsTo(phone).filter((b) => b.type === 'text')).toHaveLength(1);
  });

  it('sends go through the API limits: past the limit a person is told to wait', async () => {
    const x = await team();
    const { id } = await customerWrites(x);
    const answers: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await x.asOwner.post(
        `/dashboard/inbox/${id}/reply`,
        { _csrf: x.asOwner.csrf, key: randomBase62(22), text: `message ${i}` },
        { 'hx-request': 'true' },
      );
      answers.push(res.body);
    }
    expect(answers.filter((b) => b.includes('role="alert"') && b.includes('Too many messages'))).toHaveLength(2);
  });

  it('take over, assign (members to themselves, owners to anyone), hand back, close, notes; with their events', async () => {
    const x = await team();
    // A conversation the bot holds: opened by a trigger.
    const to = randomPhone();
    const started = await call(t, {
      method: 'POST',
      url: `/api/triggers/${x.agent.id}/order_shipped`,
      headers: x.agentKey.auth,
      payload: { to, parameters: { header: ['Hi'], body: ['Ana', 'A-1'] } },
    });
    expect(started.statusCode, started.body).toBe(200);
    const id = started.json().conversationId as string;
    const page = await x.asMember.get(`/dashboard/inbox/${id}`);
    expect(page.body).toContain('With the bot');
    expect(page.body).toContain('>Take over</button>');
    expect(page.body).toContain('The bot answers this conversation');
    expect(page.body).not.toContain('<label for="reply">');
    const conversation = async () =>
      (await call(t, { method: 'GET', url: `/api/conversations/${id}`, headers: x.orgKey.auth })).json();

    const took = await x.asMember.post(`/dashboard/inbox/${id}/take-over`, { _csrf: x.asMember.csrf });
    expect(took.statusCode).toBe(303);
    expect(took.headers.location).toBe(`/dashboard/inbox/${id}`);
    expect(await conversation()).toMatchObject({
      handler: 'human',
      assignee: { id: x.member.id, name: x.member.email },
      handoff: { reason: 'taken_over', by: 'user' },
    });
    // The window is closed (the customer never wrote): a template instead of free text.
    const closedWindow = await x.asMember.get(`/dashboard/inbox/${id}`);
    expect(closedWindow.body).toContain('The 24-hour window is closed');
    expect(closedWindow.body).toContain('<label for="template">Template</label>');
    expect(closedWindow.body).toContain('>Send template</button>');
    expect(closedWindow.body).toContain('promo_image');
    // Once the number's catalogue is synced, the picker offers its approved templates, but not
    // those whose header is a file (the picker has none to give).
    await syncCatalogue(t, { orgId: x.org.id });
    const fromCatalogue = await x.asMember.get(`/dashboard/inbox/${id}`);
    expect(fromCatalogue.body).toContain('spring_sale');
    expect(fromCatalogue.body).toContain('order_update');
    expect(fromCatalogue.body).not.toContain('promo_image');

    // A member may not assign to others; an owner may.
    const refused = await x.asMember.post(`/dashboard/inbox/${id}/assign`, { _csrf: x.asMember.csrf, to: x.owner.id });
    expect(refused.statusCode).toBe(403);
    const ownerPage = await x.asOwner.get(`/dashboard/inbox/${id}`);
    expect(ownerPage.body).toContain('<label for="assign-to">Assign to</label>');
    expect(closedWindow.body).not.toContain('<label for="assign-to">');
    const reassigned = await x.asOwner.post(`/dashboard/inbox/${id}/assign`, { _csrf: x.asOwner.csrf, to: x.owner.id });
    expect(reassigned.statusCode).toBe(303);
    expect((await conversation()).assignee).toEqual({ id: x.owner.id, name: x.owner.email });
    const mine = await x.asMember.post(`/dashboard/inbox/${id}/assign`, { _csrf: x.asMember.csrf, to: 'me' });
    expect(mine.statusCode).toBe(303);
    expect((await conversation()).assignee).toEqual({ id: x.member.id, name: x.member.email });
    // Without the CSRF token: refused, unchanged.
    expect((await x.asMember.post(`/dashboard/inbox/${id}/release`, {})).statusCode).toBe(403);

    const note = await x.asMember.post(
      `/dashboard/inbox/${id}/notes`,
      { _csrf: x.asMember.csrf, text: 'VIP: refund approved by finance' },
      { 'hx-request': 'true' },
    );
    expect(note.statusCode).toBe(200);
    const thread = await x.asOwner.get(`/dashboard/inbox/${id}/thread`, { 'hx-request': 'true' });
    expect(thread.body).toContain('VIP: refund approved by finance');
    expect(thread.body).toContain('Internal note, not sent');
    expect(textsTo(to).some((b) => JSON.stringify(b).includes('refund approved'))).toBe(false);

    const back = await x.asMember.post(`/dashboard/inbox/${id}/release`, { _csrf: x.asMember.csrf });
    expect(back.statusCode).toBe(303);
    expect(await conversation()).toMatchObject({ handler: 'bot', assignee: null, handoff: null });
    const closed = await x.asMember.post(`/dashboard/inbox/${id}/close`, { _csrf: x.asMember.csrf });
    expect(closed.statusCode).toBe(303);
    expect((await conversation()).status).toBe('closed');

    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const types = receiver.received
      .filter((r) => r.path === x.orgPath)
      .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
      .filter((e) => e.data.conversationId === id)
      .map((e) => e.type);
    expect(types).toEqual(
      expect.arrayContaining([
        'conversation.handoff',
        'conversation.assigned',
        'conversation.released',
        'conversation.closed',
      ]),
    );
    // Taken over (assigned to the member), to the owner, back to the member.
    expect(types.filter((type) => type === 'conversation.assigned')).toHaveLength(3);
  });

  it('the closed-window template path: a template with its parameters reaches the provider', async () => {
    const x = await team();
    const to = randomPhone();
    const started = await call(t, {
      method: 'POST',
      url: `/api/triggers/${x.agent.id}/order_shipped`,
      headers: x.agentKey.auth,
      payload: { to, parameters: { header: ['Hi'], body: ['Ana', 'A-1'] } },
    });
    const id = started.json().conversationId as string;
    await x.asOwner.post(`/dashboard/inbox/${id}/take-over`, { _csrf: x.asOwner.csrf });
    const page = await x.asOwner.get(`/dashboard/inbox/${id}`);
    const key = /name="key" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const fields = await x.asOwner.get(`/dashboard/inbox/${id}/template-fields?template=order_update%7Cen_US`, {
      'hx-request': 'true',
    });
    expect(fields.body).toContain('<label for="header-1">Header parameter 1</label>');
    expect(fields.body).toContain('<label for="body-2">Body parameter 2</label>');
    // Free text is refused while the window is closed, with the API's sentence.
    const text = await x.asOwner.post(
      `/dashboard/inbox/${id}/reply`,
      { _csrf: x.asOwner.csrf, key: randomBase62(22), text: 'hi' },
      { 'hx-request': 'true' },
    );
    expect(text.body).toContain('free text cannot be sent');
    const sent = await x.asOwner.post(
      `/dashboard/inbox/${id}/template`,
      { _csrf: x.asOwner.csrf, key, template: 'order_update|en_US', header: ['Hello Ana'], body: ['Ana', 'A-2'] },
      { 'hx-request': 'true' },
    );
    expect(sent.statusCode).toBe(200);
    expect(sent.body).not.toContain('role="alert"');
    const templates = textsTo(to).filter((b) => b.type === 'template');
    expect(templates).toHaveLength(2);
    expect(templates[1]).toMatchObject({
      template: {
        name: 'order_update',
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: 'Hello Ana' }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: 'A-2' },
            ],
          },
        ],
      },
    });
    // A wrong parameter count: the provider's refusal, shown beside the form.
    const wrong = await x.asOwner.post(
      `/dashboard/inbox/${id}/template`,
      {
        _csrf: x.asOwner.csrf,
        key: randomBase62(22),
        template: 'order_update|en_US',
        header: ['Hi'],
        body: ['only one'],
      },
      { 'hx-request': 'true' },
    );
    expect(wrong.body).toContain('role="alert"');
  });

  it('another organization sees none of it: 404 on its pages, fragments and actions; its stream hears nothing', async () => {
    const x = await team();
    const y = await team();
    const { id } = await customerWrites(x);
    for (const path of [`/dashboard/inbox/${id}`, `/dashboard/inbox/${id}/thread`, `/dashboard/inbox/${id}/panel`]) {
      expect((await y.asOwner.get(path)).statusCode, path).toBe(404);
    }
    for (const action of ['take-over', 'release', 'close', 'notes', 'reply']) {
      const res = await y.asOwner.post(`/dashboard/inbox/${id}/${action}`, {
        _csrf: y.asOwner.csrf,
        text: 'x',
        key: randomBase62(22),
      });
      expect(res.statusCode, action).toBe(404);
    }
    expect((await y.asOwner.get('/dashboard/inbox?view=open')).body).not.toContain(id);
    // Signed out: the stream is the sign-in page's redirect, not events.
    expect((await call(t, { method: 'GET', url: '/dashboard/inbox/stream' })).statusCode).toBe(303);

    const theirs = openStream(`${t.url}/dashboard/inbox/stream`, y.asOwner.cookie);
    const ours = openStream(`${t.url}/dashboard/inbox/stream?conversation=${id}`, x.asMember.cookie);
    await until(() => theirs.status() === 200 && ours.status() === 200, 'both streams open');
    expect(ours.contentType()).toBe('text/event-stream; charset=utf-8');
    await x.asOwner.post(`/dashboard/inbox/${id}/notes`, { _csrf: x.asOwner.csrf, text: 'only for us' });
    await until(() => ours.events.some((e) => e.event === 'changed' && e.data.includes('note')), 'our page told');
    await customerWrites(x, 'another one');
    await until(() => ours.events.length >= 1, 'ours');
    expect(theirs.events).toEqual([]);
    theirs.close();
    ours.close();
  });
});
