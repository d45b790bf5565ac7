import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import {
  countFilter,
  createSegment,
  deleteSegment,
  getSegment,
  listSegmentMembers,
  listSegments,
} from '../segments/segment.service.js';
import { isAppError } from '../shared/errors.js';
import { formatTime, html, type PageKit, redirectAfterPost } from './page-kit.js';
import {
  describeFilter,
  emptySegmentForm,
  filterOfForm,
  SegmentFormError,
  type SegmentFormValues,
  segmentFormOf,
} from './segment-form.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

/**
 * Segments (/dashboard/segments): the saved ones with their counts, and a builder whose count of
 * matching end users follows the fields as they change (htmx asks /dashboard/segments/count).
 */
export function registerSegmentPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;

  const listPage = async (session: Session, values: SegmentFormValues, error?: string, created?: string) => {
    const page = await listSegments(db, session.org.id, { limit: 100 });
    let count: number | undefined;
    try {
      count = await countFilter(db, session.org.id, filterOfForm(values));
    } catch {
      count = undefined;
    }
    return renderPage('segments', {
      title: 'Segments',
      session,
      section: 'segments',
      org: session.org,
      csrfToken: session.csrfToken,
      canManage: canManage(session.user.role),
      values,
      error,
      created,
      count: renderPartial('segment-count', { count, error: undefined }),
      rows: page.data.map((s) => ({
        id: s.id,
        name: s.name,
        filter: describeFilter(s.filter),
        count: s.count.toLocaleString('en-US'),
        counted: formatTime(s.countedAt),
      })),
    });
  };

  app.get('/dashboard/segments', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const created = (request.query as { created?: string }).created;
    return html(reply, await listPage(session, emptySegmentForm, undefined, created));
  });

  // The builder's live count: the fields as they are now, counted; a field that cannot be read says why.
  app.get('/dashboard/segments/count', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    try {
      const count = await countFilter(db, session.org.id, filterOfForm(segmentFormOf(request.query)));
      return html(reply, renderPartial('segment-count', { count }));
    } catch (err) {
      if (err instanceof SegmentFormError || (isAppError(err) && err.code === 'INVALID_BODY')) {
        return html(reply, renderPartial('segment-count', { error: err.message.replace(/^Invalid body: /, '') }));
      }
      throw err;
    }
  });

  app.post('/dashboard/segments', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const values = segmentFormOf(request.body);
    try {
      const segment = await createSegment(db, clock, session.org.id, {
        name: values.name,
        filter: filterOfForm(values),
      });
      return redirectAfterPost(request, reply, `/dashboard/segments/${segment.id}`);
    } catch (err) {
      if (!(err instanceof SegmentFormError) && !(isAppError(err) && err.code === 'INVALID_BODY')) throw err;
      const message = err.message.replace(/^Invalid body: /, '');
      return html(reply, await listPage(session, values, message), 400);
    }
  });

  app.get('/dashboard/segments/:id', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { id } = request.params as { id: string };
    const segment = await getSegment(db, clock, session.org.id, id);
    const members = await listSegmentMembers(db, session.org.id, id, { limit: 50 });
    return html(
      reply,
      renderPage('segment', {
        title: segment.name,
        session,
        section: 'segments',
        csrfToken: session.csrfToken,
        canManage: canManage(session.user.role),
        segment: {
          ...segment,
          description: describeFilter(segment.filter),
          count: segment.count.toLocaleString('en-US'),
        },
        more: members.nextCursor !== null,
        members: members.data.map((u) => ({
          name: u.name ?? '—',
          phone: u.phone ?? '—',
          email: u.email ?? '—',
          tags: u.tags.join(', ') || '—',
        })),
      }),
    );
  });

  app.post('/dashboard/segments/:id/delete', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    await deleteSegment(db, session.org.id, (request.params as { id: string }).id);
    return redirectAfterPost(request, reply, '/dashboard/segments');
  });
}
