import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { assign, type ConversationDeps, closeConversation, release, takeOver } from '../conversations/index.js';
import { addNote } from '../inbox/inbox.service.js';
import { type PersonContent, type PersonSendDeps, sendAsPerson } from '../inbox/person-send.service.js';
import { AppError, isAppError, statusOf } from '../shared/errors.js';
import {
  type ComposerMode,
  composerData,
  conversationPageData,
  inboxPath,
  load,
  noteFormData,
  personOf,
} from './inbox-parts.js';
import { field, fields, html, isHtmx, type PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { canManage, listUsers } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

/** Errors a person can act on, shown beside the form that caused them; anything else is the error page. */
const shown = (err: unknown): err is AppError =>
  isAppError(err) && (statusOf(err.code) < 500 || err.code === 'PROVIDER_UNAVAILABLE');

/** Tells every live part of the page that sent the form to read itself again. */
const REFRESH = { 'hx-trigger': 'inbox-refresh' };

/**
 * The inbox's actions on a conversation. Members reply, send templates, take over, assign to
 * themselves, hand back, close and add notes; owners and admins also assign to others. A reply or
 * a note sent with htmx answers with its fresh form (or the form with its error) and makes the page
 * read its thread again; the other actions, and every form sent without JavaScript, load the
 * conversation's page again.
 */
export function registerInboxActionPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const deps: ConversationDeps = {
    db: ctx.db,
    jobs: ctx.jobs,
    clock: ctx.clock,
    idleMs: ctx.config.conversations.idleMs,
  };
  const sendDeps: PersonSendDeps = {
    ...ctx,
    onFirstReply: (seconds) => ctx.metrics?.firstHumanReply.observe(seconds),
  };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const reader = (session: Session) => ({ orgId: session.org.id, agentId: null });
  const back = (reply: FastifyReply, id: string) => reply.redirect(inboxPath(id), 303);

  /** A send from the composer (free text or a template): its fresh form, or the form with its error. */
  const composerAnswer = async (
    request: FastifyRequest,
    reply: FastifyReply,
    mode: ComposerMode,
    content: PersonContent,
    kept: { text?: string; selected?: string },
  ) => {
    const session = kit.sessionOf(request);
    const id = idOf(request);
    let error: string | undefined;
    try {
      await sendAsPerson(sendDeps, personOf(session), id, content, field(request.body, 'key'));
    } catch (err) {
      if (!shown(err)) throw err;
      error = err.message;
    }
    const loaded = await load(ctx.db, session, id, false);
    if (!isHtmx(request)) {
      if (!error) return back(reply, id);
      const { data } = await conversationPageData(ctx, session, id);
      const composer = await composerData(ctx, session, loaded, mode, { error, ...kept });
      return html(
        reply,
        renderPage('inbox-conversation', {
          title: `${data.who} · Inbox`,
          session,
          section: 'inbox',
          live: true,
          ...data,
          composer,
        }),
        400,
      );
    }
    const composer = await composerData(ctx, session, loaded, mode, error ? { error, ...kept } : {});
    if (!error) reply.headers(REFRESH);
    return html(reply, renderPartial('inbox-composer', composer));
  };

  app.post('/dashboard/inbox/:id/reply', kit.signedIn, async (request, reply) => {
    const text = field(request.body, 'text');
    return composerAnswer(request, reply, 'reply', { kind: 'text', text }, { text });
  });

  app.post('/dashboard/inbox/:id/template', kit.signedIn, async (request, reply) => {
    const selected = field(request.body, 'template');
    const [name = '', language = ''] = selected.split('|');
    const lines = (name: string) =>
      field(request.body, name)
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean);
    const body = [...fields(request.body, 'body'), ...lines('bodyLines')];
    const header = [...fields(request.body, 'header'), ...lines('headerLines')];
    return composerAnswer(request, reply, 'template', { kind: 'template', name, language, body, header }, { selected });
  });

  app.post('/dashboard/inbox/:id/notes', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const id = idOf(request);
    let error: string | undefined;
    try {
      await addNote(ctx, personOf(session), id, field(request.body, 'text'));
    } catch (err) {
      if (!shown(err) || err.code === 'NOT_FOUND') throw err;
      error = err.message;
    }
    if (!isHtmx(request)) {
      if (!error) return back(reply, id);
      const { data } = await conversationPageData(ctx, session, id);
      return html(
        reply,
        renderPage('inbox-conversation', {
          title: `${data.who} · Inbox`,
          session,
          section: 'inbox',
          live: true,
          ...data,
          noteForm: noteFormData(session, id, error),
        }),
        400,
      );
    }
    if (!error) reply.headers(REFRESH);
    return html(reply, renderPartial('inbox-note-form', noteFormData(session, id, error)));
  });

  app.post('/dashboard/inbox/:id/take-over', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const person = personOf(session);
    await takeOver(deps, reader(session), idOf(request), { id: person.id, name: person.name });
    return back(reply, idOf(request));
  });

  app.post('/dashboard/inbox/:id/assign', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const person = personOf(session);
    const to = field(request.body, 'to');
    let assignee: { id: string; name: string } | null;
    if (to === 'me' || to === session.user.id) {
      assignee = { id: person.id, name: person.name };
    } else {
      // Anyone else (or nobody): owners and admins only.
      if (!canManage(session.user.role)) {
        throw new AppError(
          'FORBIDDEN',
          'Only owners and admins assign conversations to others; you can assign them to yourself.',
        );
      }
      if (to === 'none') assignee = null;
      else {
        const user = (await listUsers(ctx.db, session.org.id)).find((u) => u.id === to);
        if (!user) throw new AppError('INVALID_BODY', 'That person is not part of your organization.');
        assignee = { id: user.id, name: user.email };
      }
    }
    await assign(deps, reader(session), idOf(request), assignee, { type: 'user', id: person.id, name: person.name });
    return back(reply, idOf(request));
  });

  app.post('/dashboard/inbox/:id/release', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const person = personOf(session);
    await release(deps, reader(session), idOf(request), { type: 'user', id: person.id, name: person.name });
    return back(reply, idOf(request));
  });

  app.post('/dashboard/inbox/:id/close', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    await closeConversation(deps, reader(session), idOf(request), 'closed');
    return back(reply, idOf(request));
  });
}
