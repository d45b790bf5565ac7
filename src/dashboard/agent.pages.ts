import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import type { ConversationListQuery } from '../conversations/conversation.schemas.js';
import { getConversation, listConversationMessages, listConversations } from '../conversations/conversation.service.js';
import { getEndUser } from '../end-users/end-user.service.js';
import { listEndpoints } from '../events/endpoint.service.js';
import { listNumbers } from '../numbers/number.service.js';
import { AppError, isAppError } from '../shared/errors.js';
import { createTrigger, listTriggers, setTriggerEnabled } from '../triggers/trigger.service.js';
import type { Session } from './session.service.js';
import { renderPage } from './views.js';

/** What the pages share with the rest of the dashboard. */
export interface PageKit {
  readonly signedIn: { schema: { hide: true }; preHandler: preHandlerAsyncHookHandler };
  sessionOf(request: FastifyRequest): Session;
  mustManage(session: Session): void;
  html(reply: FastifyReply, body: string, status?: number): FastifyReply;
  field(form: unknown, name: string): string;
  formatTime(ms: number): string;
}

/** Agents (number, triggers, hook endpoint) and conversations (list, thread). Pages call the services. */
export function registerAgentPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;

  const agentsPage = async (session: Session, error?: string) => {
    const [agents, numbers, endpoints, triggers] = await Promise.all([
      listAgents(db, session.org.id),
      listNumbers(db, session.org.id),
      listEndpoints(db, session.org.id),
      listTriggers(db, session.org.id),
    ]);
    const phones = new Map(numbers.map((n) => [n.id, n.phone]));
    return renderPage('agents', {
      title: 'Agents',
      session,
      section: 'agents',
      csrfToken: session.csrfToken,
      canManage: session.user.role !== 'member',
      error,
      agents: agents.map((a) => ({
        id: a.id,
        name: a.name,
        number: a.numberId ? (phones.get(a.numberId) ?? a.numberId) : 'none assigned',
        endpoints: endpoints
          .filter((e) => e.agentId === a.id)
          .map((e) => ({ url: e.url, state: e.disabledAt === null ? 'enabled' : 'disabled' })),
        triggers: triggers.filter((t) => t.agentId === a.id),
      })),
    });
  };

  app.get('/dashboard/agents', kit.signedIn, async (request, reply) =>
    kit.html(reply, await agentsPage(kit.sessionOf(request))),
  );
  app.post('/dashboard/agents/:agentId/triggers', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId } = request.params as { agentId: string };
    const id = kit.field(request.body, 'id').trim();
    try {
      await createTrigger(db, clock, {
        orgId: session.org.id,
        agentId,
        name: kit.field(request.body, 'name'),
        template: kit.field(request.body, 'template'),
        language: kit.field(request.body, 'language').trim(),
        ...(id ? { id } : {}),
      });
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      return kit.html(reply, await agentsPage(session, `The trigger was not added: ${err.message}.`), 400);
    }
    return reply.redirect('/dashboard/agents', 303);
  });
  app.post('/dashboard/agents/:agentId/triggers/:triggerId/:change', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId, triggerId, change } = request.params as { agentId: string; triggerId: string; change: string };
    if (change !== 'enable' && change !== 'disable') throw new AppError('NOT_FOUND', 'No such action.');
    await setTriggerEnabled(db, { orgId: session.org.id, agentId, id: triggerId, enabled: change === 'enable' });
    return reply.redirect('/dashboard/agents', 303);
  });

  app.get('/dashboard/conversations', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const q = request.query as Record<string, string | undefined>;
    const agents = await listAgents(db, session.org.id);
    const names = new Map(agents.map((a) => [a.id, a.name]));
    const query: ConversationListQuery = { limit: 50 };
    if (q.agent) query.agent = q.agent;
    if (q.status === 'open' || q.status === 'closed') query.status = q.status;
    if (q.cursor) query.cursor = q.cursor;
    const page = await listConversations(db, { orgId: session.org.id, agentId: null }, query);
    const next = page.nextCursor
      ? `/dashboard/conversations?${new URLSearchParams({
          ...(query.agent ? { agent: query.agent } : {}),
          ...(query.status ? { status: query.status } : {}),
          cursor: page.nextCursor,
        }).toString()}`
      : undefined;
    return kit.html(
      reply,
      renderPage('conversations', {
        title: 'Conversations',
        session,
        section: 'conversations',
        agents,
        agent: query.agent,
        status: query.status,
        next,
        rows: page.data.map((c) => ({
          id: c.id,
          started: kit.formatTime(c.startedAt),
          agent: names.get(c.agentId) ?? c.agentId,
          endUserId: c.endUserId,
          trigger: c.triggerId ?? '—',
          status: c.status === 'open' ? 'Open' : 'Closed',
          last: kit.formatTime(c.lastMessageAt),
        })),
      }),
    );
  });
  app.get('/dashboard/conversations/:id', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { id } = request.params as { id: string };
    const q = request.query as Record<string, string | undefined>;
    const reader = { orgId: session.org.id, agentId: null };
    const found = await getConversation(db, () => reader, id);
    const page = await listConversationMessages(db, reader, id, {
      limit: 100,
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
    const agents = await listAgents(db, session.org.id);
    // The person by name or number (the record may have been deleted since: then its ID).
    const endUser = await getEndUser(db, session.org.id, found.endUserId).catch((err: unknown) => {
      if (isAppError(err) && err.code === 'NOT_FOUND') return undefined;
      throw err;
    });
    return kit.html(
      reply,
      renderPage('thread', {
        endUserName: endUser?.name ?? endUser?.phone ?? found.endUserId,
        title: 'Conversation',
        session,
        section: 'conversations',
        conversation: found,
        agentName: agents.find((a) => a.id === found.agentId)?.name ?? found.agentId,
        started: kit.formatTime(found.startedAt),
        next: page.nextCursor
          ? `/dashboard/conversations/${encodeURIComponent(id)}?cursor=${page.nextCursor}`
          : undefined,
        messages: page.data.map((m) => ({
          who: m.direction === 'inbound' ? 'End user' : 'Agent',
          at: kit.formatTime(m.createdAt),
          text:
            m.type === 'template' && m.template
              ? `Template ${m.template.name}${m.template.parameters ? `: ${m.template.parameters.body.join(', ')}` : ''}`
              : (m.text ?? ''),
          status: m.status,
        })),
      }),
    );
  });
}
