import type { FastifyInstance } from 'fastify';
import { getCampaign } from '../campaigns/campaign.service.js';
import { cancelSegmentSend, listSegmentSends, scheduleSegmentSend } from '../campaigns/segment-send.service.js';
import type { AppContext } from '../context.js';
import { listSegments } from '../segments/segment.service.js';
import { isAppError } from '../shared/errors.js';
import { field, formatTime, html, isHtmx, type PageKit, redirectAfterPost } from './page-kit.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPartial } from './views.js';

/**
 * A campaign's sends to segments, on its page: pick a segment, now or a date and time (UTC), and
 * watch it run (the table asks again every two seconds while a send is scheduled or running).
 */

const STATUS_TEXT = { scheduled: 'Scheduled', running: 'Running', done: 'Done', canceled: 'Canceled' } as const;

export async function segmentSendsSection(
  ctx: Pick<AppContext, 'db'>,
  session: Session,
  campaignId: string,
  form: { segment?: string; at?: string; error?: string } = {},
): Promise<string> {
  const segments = canManage(session.user.role)
    ? (await listSegments(ctx.db, session.org.id, { limit: 200 })).data
    : [];
  return renderPartial('campaign-sends', {
    campaignId,
    csrfToken: session.csrfToken,
    canManage: canManage(session.user.role),
    segments: segments.map((s) => ({ id: s.id, name: s.name, count: s.count })),
    form,
    table: await sendsTable(ctx, session, campaignId),
  });
}

async function sendsTable(ctx: Pick<AppContext, 'db'>, session: Session, campaignId: string): Promise<string> {
  const sends = await listSegmentSends(ctx.db, campaignId);
  return renderPartial('campaign-sends-table', {
    campaignId,
    csrfToken: session.csrfToken,
    canManage: canManage(session.user.role),
    live: sends.some((s) => s.status === 'scheduled' || s.status === 'running'),
    rows: sends.map((s) => ({
      id: s.id,
      segment: s.segmentName,
      status: STATUS_TEXT[s.status],
      cancelable: s.status === 'scheduled',
      at: formatTime(s.at),
      counts: s.counts,
      note: s.error ?? '',
    })),
  });
}

/** `YYYY-MM-DDTHH:MM` read as UTC; empty: now. */
function atOf(text: string): number | undefined | 'bad' {
  const value = text.trim();
  if (!value) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value)) return 'bad';
  const ms = Date.parse(`${value}:00Z`);
  return Number.isNaN(ms) ? 'bad' : ms;
}

export function registerSegmentSendPages(
  app: FastifyInstance,
  ctx: AppContext,
  kit: PageKit,
  campaignPage: (session: Session, campaignId: string, sends: string) => Promise<string>,
): void {
  const page = (id: string) => `/dashboard/campaigns/${id}`;

  app.get('/dashboard/campaigns/:campaignId/sends', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { campaignId } = request.params as { campaignId: string };
    if (!isHtmx(request)) return reply.redirect(`${page(campaignId)}#sends-title`, 303);
    // The campaign must be the organization's: listing its sends is reading it.
    await listSegmentSendsOfOrg(ctx, session, campaignId);
    return html(reply, await sendsTable(ctx, session, campaignId));
  });

  app.post('/dashboard/campaigns/:campaignId/sends', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId } = request.params as { campaignId: string };
    const segment = field(request.body, 'segment');
    const when = field(request.body, 'when');
    const atText = field(request.body, 'at');
    const at = when === 'later' ? atOf(atText) : undefined;
    const again = async (error: string) =>
      html(
        reply,
        await campaignPage(
          session,
          campaignId,
          await segmentSendsSection(ctx, session, campaignId, { segment, at: atText, error }),
        ),
        400,
      );
    if (at === 'bad' || (when === 'later' && at === undefined)) return again('Give the date and time to send at.');
    if (at !== undefined && at < Date.now()) return again('That time has passed: choose a later one, or Now.');
    try {
      await scheduleSegmentSend(ctx, session.org.id, campaignId, { segment, ...(at !== undefined ? { at } : {}) });
    } catch (err) {
      if (isAppError(err) && (err.code === 'INVALID_BODY' || err.code === 'CONFLICT' || err.code === 'NOT_FOUND')) {
        if (err.code === 'NOT_FOUND' && err.message.startsWith('No campaign')) throw err;
        return again(err.code === 'NOT_FOUND' ? 'Choose a segment.' : err.message.replace(/^Invalid body: /, ''));
      }
      throw err;
    }
    return redirectAfterPost(request, reply, `${page(campaignId)}#sends-title`);
  });

  app.post('/dashboard/campaigns/:campaignId/sends/:sendId/cancel', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId, sendId } = request.params as { campaignId: string; sendId: string };
    await cancelSegmentSend(ctx, session.org.id, campaignId, sendId);
    return redirectAfterPost(request, reply, `${page(campaignId)}#sends-title`);
  });
}

async function listSegmentSendsOfOrg(ctx: Pick<AppContext, 'db'>, session: Session, campaignId: string) {
  await getCampaign(ctx.db, session.org.id, campaignId);
}
