import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { getConversation, listConversationMessages } from '../conversations/conversation.service.js';
import { pageOfConversationSummaries, type StartedBy } from '../conversations/conversation-list.service.js';
import { getEndUser } from '../end-users/end-user.service.js';
import { isAppError } from '../shared/errors.js';
import { formatTime, html, type PageKit } from './page-kit.js';
import { PAGE_SIZE, pageRequestOf, pagerOf } from './pager.js';
import { threadItemOf } from './thread-items.js';
import { renderPage } from './views.js';

const startedByText = (by: StartedBy) =>
  by.kind === 'trigger'
    ? `Trigger: ${by.name}`
    : by.kind === 'campaign'
      ? `Campaign: ${by.name}`
      : by.kind === 'customer'
        ? 'Customer'
        : 'Agent';

/** A message's first words on one line, for the list (the thread shows it whole). */
const PREVIEW = 80;
function preview(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return [...line].length <= PREVIEW ? line : `${[...line].slice(0, PREVIEW - 1).join('')}…`;
}

/** Conversations (/dashboard/conversations): the list by agent and status, and a thread per conversation. */
export function registerConversationPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;

  app.get('/dashboard/conversations', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const q = request.query as Record<string, string | undefined>;
    const agents = await listAgents(db, session.org.id);
    const names = new Map(agents.map((a) => [a.id, a.name]));
    const agent = q.agent ? q.agent.slice(0, 200) : undefined;
    const status = q.status === 'open' || q.status === 'closed' ? q.status : undefined;
    const page = await pageOfConversationSummaries(db, session.org.id, { agentId: agent, status }, pageRequestOf(q));
    return html(
      reply,
      renderPage('conversations', {
        title: 'Conversations',
        session,
        section: 'conversations',
        agents,
        agent,
        status,
        pageSize: PAGE_SIZE,
        pager: pagerOf('/dashboard/conversations', { agent, status }, page),
        rows: page.data.map((c) => ({
          id: c.id,
          started: formatTime(c.startedAt),
          agent: names.get(c.agentId) ?? c.agentId,
          endUser: c.endUser.name ?? c.endUser.phone ?? c.endUser.id,
          // The number beside the name; alone it already names the person.
          endUserPhone: c.endUser.name !== null ? c.endUser.phone : null,
          startedBy: startedByText(c.startedBy),
          campaignId: c.startedBy.kind === 'campaign' ? c.startedBy.campaignId : undefined,
          status: c.status === 'open' ? 'Open' : 'Closed',
          last: c.lastMessage
            ? {
                who: c.lastMessage.direction === 'inbound' ? 'End user' : 'Agent',
                text: preview(c.lastMessage.text),
                at: formatTime(c.lastMessage.at),
              }
            : undefined,
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
        messages: page.data.map(threadItemOf),
      }),
    );
  });
}
