import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import type { ConversationListQuery } from '../conversations/conversation.schemas.js';
import { getConversation, listConversationMessages, listConversations } from '../conversations/conversation.service.js';
import { getEndUser } from '../end-users/end-user.service.js';
import { isAppError } from '../shared/errors.js';
import { formatTime, html, type PageKit } from './page-kit.js';
import { renderPage } from './views.js';

/** Conversations (/dashboard/conversations): the list by agent and status, and a thread per conversation. */
export function registerConversationPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;

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
    return html(
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
          started: formatTime(c.startedAt),
          agent: names.get(c.agentId) ?? c.agentId,
          endUserId: c.endUserId,
          trigger: c.triggerId ?? '—',
          status: c.status === 'open' ? 'Open' : 'Closed',
          last: formatTime(c.lastMessageAt),
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
    return html(
      reply,
      renderPage('thread', {
        endUserName: endUser?.name ?? endUser?.phone ?? found.endUserId,
        title: 'Conversation',
        session,
        section: 'conversations',
        conversation: found,
        agentName: agents.find((a) => a.id === found.agentId)?.name ?? found.agentId,
        started: formatTime(found.startedAt),
        next: page.nextCursor
          ? `/dashboard/conversations/${encodeURIComponent(id)}?cursor=${page.nextCursor}`
          : undefined,
        messages: page.data.map((m) => ({
          who: m.direction === 'inbound' ? 'End user' : 'Agent',
          at: formatTime(m.createdAt),
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
