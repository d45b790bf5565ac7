import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { hookHealthByAgent } from '../events/hook-health.service.js';
import { listNumbers } from '../numbers/number.service.js';
import { AppError, isAppError } from '../shared/errors.js';
import { createTrigger, listTriggers, setTriggerEnabled } from '../triggers/trigger.service.js';
import { hookHealthView } from './hooks.pages.js';
import { field, html, type PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { renderPage } from './views.js';

/** Agents (/dashboard/agents): each with its number, its hooks' health and triggers; managers add, enable and disable triggers. */
export function registerAgentPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;

  const agentsPage = async (session: Session, error?: string) => {
    const [agents, numbers, hooks, triggers] = await Promise.all([
      listAgents(db, session.org.id),
      listNumbers(db, session.org.id),
      hookHealthByAgent(db, session.org.id, clock.now()),
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
        hooks: (hooks.get(a.id) ?? []).map(hookHealthView),
        triggers: triggers.filter((t) => t.agentId === a.id),
      })),
    });
  };

  app.get('/dashboard/agents', kit.signedIn, async (request, reply) =>
    html(reply, await agentsPage(kit.sessionOf(request))),
  );
  app.post('/dashboard/agents/:agentId/triggers', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId } = request.params as { agentId: string };
    const id = field(request.body, 'id').trim();
    try {
      await createTrigger(db, clock, {
        orgId: session.org.id,
        agentId,
        name: field(request.body, 'name'),
        template: field(request.body, 'template'),
        language: field(request.body, 'language').trim(),
        ...(id ? { id } : {}),
      });
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      return html(reply, await agentsPage(session, `The trigger was not added: ${err.message}.`), 400);
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
}
