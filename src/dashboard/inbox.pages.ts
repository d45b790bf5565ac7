import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { countWaiting, type InboxView, isInboxView, listInbox, templatesFor } from '../inbox/inbox.service.js';
import { BUILT_IN_TEMPLATES } from '../sandbox/index.js';
import { composerData, conversationPageData, fieldsOf, load, modeOf, panelData, personOf } from './inbox-parts.js';
import { listRow } from './inbox-view.js';
import { html, type PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { renderPage, renderPartial } from './views.js';

const VIEWS: readonly { id: InboxView; name: string; caption: string; empty: string }[] = [
  {
    id: 'people',
    name: 'With people',
    caption: 'Open conversations people answer',
    empty: 'No conversation waits for people: the bots have them all.',
  },
  { id: 'mine', name: 'Mine', caption: 'Open conversations assigned to you', empty: 'Nothing is assigned to you.' },
  {
    id: 'unassigned',
    name: 'Unassigned',
    caption: 'Open conversations with people, assigned to nobody',
    empty: 'Every conversation with people is assigned.',
  },
  {
    id: 'open',
    name: 'All open',
    caption: "Every open conversation, the bots' too",
    empty: 'No open conversation.',
  },
];

const viewOf = (query: unknown): (typeof VIEWS)[number] => {
  const v = String((query as Record<string, unknown>).view ?? 'people');
  return VIEWS.find((x) => x.id === (isInboxView(v) ? v : 'people')) ?? (VIEWS[0] as (typeof VIEWS)[number]);
};

/**
 * The inbox (/dashboard/inbox): the lists of conversations and a conversation's page, for every
 * person of the organization, and the fragments open pages read again when told of a change
 * (inbox-stream.ts). Its actions are in inbox-actions.pages.ts.
 */
export function registerInboxPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;

  const listData = async (session: Session, view: (typeof VIEWS)[number], oob: boolean) => {
    const [items, agents] = await Promise.all([
      listInbox(db, personOf(session), view.id),
      listAgents(db, session.org.id),
    ]);
    const names = new Map(agents.map((a) => [a.id, a.name]));
    return {
      view: view.id,
      caption: view.caption,
      empty: view.empty,
      rows: items.map((item) => listRow(item, names, session.user.id)),
      oob,
      waiting: oob ? await countWaiting(db, session.org.id) : 0,
    };
  };

  app.get('/dashboard/inbox', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const view = viewOf(request.query);
    return html(
      reply,
      renderPage('inbox', {
        title: 'Inbox',
        session,
        section: 'inbox',
        live: true,
        views: VIEWS,
        ...(await listData(session, view, false)),
      }),
    );
  });

  app.get('/dashboard/inbox/list', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    return html(reply, renderPartial('inbox-list', await listData(session, viewOf(request.query), true)));
  });

  app.get('/dashboard/inbox/:id', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { id } = request.params as { id: string };
    const { data } = await conversationPageData(ctx, session, id);
    return html(
      reply,
      renderPage('inbox-conversation', {
        title: `${data.who} · Inbox`,
        session,
        section: 'inbox',
        live: true,
        ...data,
      }),
    );
  });

  app.get('/dashboard/inbox/:id/thread', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const loaded = await load(db, session, (request.params as { id: string }).id);
    return html(reply, renderPartial('inbox-thread', loaded.thread));
  });

  app.get('/dashboard/inbox/:id/panel', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const loaded = await load(db, session, (request.params as { id: string }).id, false);
    return html(reply, renderPartial('inbox-panel', await panelData(ctx, session, loaded, true)));
  });

  // The composer is read again on every change, and replaced only when what it offers changed
  // (the window opened or closed, the conversation was taken over...): a reply being typed stays.
  app.get('/dashboard/inbox/:id/composer', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const loaded = await load(db, session, (request.params as { id: string }).id, false);
    const mode = await modeOf(ctx, session, loaded);
    if (String((request.query as Record<string, unknown>).mode ?? '') === mode) return reply.code(204).send();
    return html(reply, renderPartial('inbox-composer', await composerData(ctx, session, loaded, mode)));
  });

  app.get('/dashboard/inbox/:id/template-fields', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const loaded = await load(db, session, (request.params as { id: string }).id, false);
    const templates = await templatesFor(db, session.org.id, loaded.conversation.agentId, [
      ...BUILT_IN_TEMPLATES,
      ...ctx.config.messaging.sandboxTemplates,
    ]);
    const selected = String((request.query as Record<string, unknown>).template ?? '');
    return html(reply, renderPartial('inbox-template-fields', fieldsOf(templates, selected)));
  });
}
