import type { FastifyInstance } from 'fastify';
import { setHoldingText } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { field, type PageKit, redirectAfterPost } from './page-kit.js';

/**
 * An agent's holding text, set on its page by owners and admins: the free text Parley sends the
 * end user when it hands a conversation to people because the agent has no hook or its hook did not
 * answer. An empty text removes it.
 */
export function registerHoldingTextPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  app.post('/dashboard/agents/:agentId/holding-text', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId } = request.params as { agentId: string };
    const text = field(request.body, 'holdingText');
    await setHoldingText(ctx.db, session.org.id, agentId, text);
    return redirectAfterPost(request, reply, `/dashboard/agents/${encodeURIComponent(agentId)}?saved=holding-text`);
  });
}
