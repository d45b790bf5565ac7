import type { FastifyInstance } from 'fastify';
import { findAgent } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { endpointAddressWarning } from '../events/address-warning.service.js';
import {
  createEndpoint,
  deleteEndpoint,
  disableEndpoint,
  type EventEndpoint,
  enableEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  replayDelivery,
} from '../events/endpoint.service.js';
import { EVENT_TYPES } from '../events/event.service.js';
import { deliveryOutcome, type HookHealth, hookHealthByAgent } from '../events/hook-health.service.js';
import { listNumbers } from '../numbers/number.service.js';
import { numberPolicyView } from '../policies/number-view.service.js';
import { AppError, isAppError } from '../shared/errors.js';
import { field, fields, formatTime, html, isHtmx, type PageKit, redirectAfterPost } from './page-kit.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

/** Deliveries shown per hook on the agent's page, newest first. */
const RECENT_DELIVERIES = 20;

interface HookValues {
  url: string;
  events: string[];
}
const noValues: HookValues = { url: '', events: [] };

/** A hook's health in words, for the agent's page, the Agents list and the home page. */
export function hookHealthView(h: HookHealth) {
  const stateText =
    h.state === 'disabled'
      ? `Disabled${h.endpoint.disabledReason ? `: ${h.endpoint.disabledReason}` : ''}`
      : h.state === 'failing'
        ? 'Failing'
        : h.state === 'healthy'
          ? 'Working'
          : 'No deliveries yet';
  return {
    id: h.endpoint.id,
    url: h.endpoint.url,
    events: h.endpoint.events.includes('*') ? 'all events' : h.endpoint.events.join(', '),
    state: h.state,
    enabled: h.endpoint.disabledAt === null,
    stateText,
    lastText: h.lastAt === null ? 'never' : `${h.lastOutcome ?? ''}, ${formatTime(h.lastAt)}`,
    failuresLastHour: h.failuresLastHour,
  };
}

/**
 * An agent's page (/dashboard/agents/<agentId>): its number and its hooks (event endpoints bound
 * to it) with their health and recent deliveries. Owners and admins create a hook (its signing
 * secret shown once), disable, enable and delete it, and resend a delivery; members look.
 */
export function registerHookPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const agentPath = (agentId: string) => `/dashboard/agents/${encodeURIComponent(agentId)}`;

  const agentOf = async (session: Session, agentId: string) => {
    const agent = await findAgent(db, session.org.id, agentId);
    if (!agent) throw new AppError('NOT_FOUND', 'No such agent in your organization.');
    return agent;
  };
  /** The agent's hook, or a 404: a hook of another agent or organization is not found here. */
  const hookOf = async (session: Session, agentId: string, endpointId: string): Promise<EventEndpoint> => {
    const endpoint = await getEndpoint(db, session.org.id, endpointId).catch(() => undefined);
    if (!endpoint || endpoint.agentId !== agentId) throw new AppError('NOT_FOUND', 'No such hook for this agent.');
    return endpoint;
  };

  const agentPage = async (session: Session, agentId: string, dialog?: string) => {
    const agent = await agentOf(session, agentId);
    const [numbers, health] = await Promise.all([
      listNumbers(db, session.org.id),
      hookHealthByAgent(db, session.org.id, clock.now()),
    ]);
    const hooks = await Promise.all(
      (health.get(agent.id) ?? []).map(async (h) => ({
        ...hookHealthView(h),
        deliveries: (await listDeliveries(db, session.org.id, h.endpoint.id, { limit: RECENT_DELIVERIES })).map((d) => {
          const outcome = deliveryOutcome(d);
          return {
            id: d.id,
            eventId: d.eventId,
            type: d.type,
            statusText: outcome.word,
            detail: outcome.detail || '—',
            attempts: d.attempts,
            error: d.lastError ?? '—',
            created: formatTime(d.createdAt),
            updated: formatTime(d.updatedAt),
            canResend: d.status !== 'pending',
          };
        }),
      })),
    );
    const phone = agent.numberId ? numbers.find((n) => n.id === agent.numberId)?.phone : undefined;
    return renderPage(
      'agent',
      {
        title: agent.name,
        session,
        section: 'agents',
        csrfToken: session.csrfToken,
        canManage: canManage(session.user.role),
        agent,
        number: agent.numberId ? (phone ?? agent.numberId) : 'none assigned',
        hooks,
        policy: await numberPolicyView(db, session.org.id, agent.numberId),
      },
      dialog,
    );
  };

  const createDialog = (session: Session, agentId: string, values: HookValues, open: boolean, error?: string) =>
    renderPartial('hook-create-dialog', {
      csrfToken: session.csrfToken,
      agentId,
      eventTypes: EVENT_TYPES,
      values,
      open,
      error,
    });
  const deleteDialog = (session: Session, agentId: string, endpoint: EventEndpoint, open: boolean) =>
    renderPartial('hook-delete-dialog', { csrfToken: session.csrfToken, agentId, endpoint, open });

  app.get('/dashboard/agents/:agentId', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { agentId } = request.params as { agentId: string };
    const query = request.query as Record<string, string | undefined>;
    let dialog: string | undefined;
    if (query.hook !== undefined && canManage(session.user.role)) {
      await agentOf(session, agentId);
      dialog = createDialog(session, agentId, noValues, true);
    } else if (query.delete && canManage(session.user.role)) {
      dialog = deleteDialog(session, agentId, await hookOf(session, agentId, query.delete), true);
    }
    return html(reply, await agentPage(session, agentId, dialog));
  });

  app.get('/dashboard/agents/:agentId/hooks/new', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId } = request.params as { agentId: string };
    await agentOf(session, agentId);
    if (!isHtmx(request)) return reply.redirect(`${agentPath(agentId)}?hook=new`, 303);
    return html(reply, createDialog(session, agentId, noValues, false));
  });

  /** The warning alone, as the address is typed (htmx); the created dialog repeats it. */
  app.post('/dashboard/agents/:agentId/hooks/check', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const warning = await endpointAddressWarning(field(request.body, 'url').trim(), ctx.config.events);
    return html(reply, renderPartial('hook-warning', { warning }));
  });

  app.post('/dashboard/agents/:agentId/hooks', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId } = request.params as { agentId: string };
    const agent = await agentOf(session, agentId);
    const values: HookValues = { url: field(request.body, 'url').trim(), events: fields(request.body, 'events') };
    const htmx = isHtmx(request);
    let created: Awaited<ReturnType<typeof createEndpoint>>;
    try {
      if (!values.url) throw new AppError('INVALID_BODY', 'Give the address that receives the events.');
      created = await createEndpoint(ctx, {
        orgId: session.org.id,
        agentId: agent.id,
        url: values.url,
        events: values.events.join(','),
        actor: session.user.email,
      });
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      const dialog = createDialog(session, agent.id, values, !htmx, err.message);
      // htmx swaps only successful answers by default, so the dialog with its explanation is a 200 there.
      return htmx ? html(reply, dialog) : html(reply, await agentPage(session, agent.id, dialog), 400);
    }
    const dialog = renderPartial('hook-created-dialog', {
      endpoint: created,
      secret: created.secret,
      warning: await endpointAddressWarning(created.url, ctx.config.events),
      back: agentPath(agent.id),
      open: !htmx,
    });
    return htmx ? html(reply, dialog) : html(reply, await agentPage(session, agent.id, dialog));
  });

  app.post('/dashboard/agents/:agentId/hooks/:endpointId/:change', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId, endpointId, change } = request.params as { agentId: string; endpointId: string; change: string };
    const endpoint = await hookOf(session, agentId, endpointId);
    const audit = { actor: session.user.email, clock };
    if (change === 'disable') await disableEndpoint(db, session.org.id, endpoint.id, audit);
    else if (change === 'enable') await enableEndpoint(db, session.org.id, endpoint.id, audit);
    else if (change === 'delete') await deleteEndpoint(db, session.org.id, endpoint.id, audit);
    else throw new AppError('NOT_FOUND', 'No such action.');
    return redirectAfterPost(request, reply, agentPath(agentId));
  });
  app.get('/dashboard/agents/:agentId/hooks/:endpointId/delete', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { agentId, endpointId } = request.params as { agentId: string; endpointId: string };
    const endpoint = await hookOf(session, agentId, endpointId);
    if (!isHtmx(request)) return reply.redirect(`${agentPath(agentId)}?delete=${encodeURIComponent(endpointId)}`, 303);
    return html(reply, deleteDialog(session, agentId, endpoint, false));
  });

  app.post(
    '/dashboard/agents/:agentId/hooks/:endpointId/deliveries/:deliveryId/resend',
    kit.signedIn,
    async (request, reply) => {
      const session = kit.sessionOf(request);
      kit.mustManage(session);
      const { agentId, endpointId, deliveryId } = request.params as {
        agentId: string;
        endpointId: string;
        deliveryId: string;
      };
      const endpoint = await hookOf(session, agentId, endpointId);
      const delivery = await getDelivery(db, session.org.id, deliveryId);
      if (delivery.endpointId !== endpoint.id) throw new AppError('NOT_FOUND', 'No such delivery of this hook.');
      await replayDelivery(db, ctx.jobs, clock, session.org.id, deliveryId, session.user.email);
      return redirectAfterPost(request, reply, agentPath(agentId));
    },
  );
}
