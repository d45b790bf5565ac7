import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { pageOfEndUsers } from '../end-users/end-user.service.js';
import { isAppError } from '../shared/errors.js';
import { formatTime, html, type PageKit } from './page-kit.js';
import { PAGE_SIZE, pageRequestOf, pagerOf } from './pager.js';
import { renderPage } from './views.js';

/** End users (/dashboard/end-users): newest first, a page at a time, searched by name, email or phone. */
export function registerEndUserPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;

  app.get('/dashboard/end-users', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const query = request.query as Record<string, string | undefined>;
    const q = (query.q ?? '').trim().slice(0, 200);
    // One `key:value` attribute filter, as the API's `attribute` parameter.
    const attribute = (query.attribute ?? '').trim().slice(0, 1100);
    let page: Awaited<ReturnType<typeof pageOfEndUsers>> = { data: [], next: null, previous: null };
    let error: string | undefined;
    try {
      const filter = { ...(q ? { q } : {}), ...(attribute ? { attribute: [attribute] } : {}) };
      page = await pageOfEndUsers(db, session.org.id, filter, pageRequestOf(query));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      error = err.message.replace(/^Invalid query parameter: /, '');
    }
    return html(
      reply,
      renderPage(
        'end-users',
        {
          title: 'End users',
          session,
          section: 'end-users',
          org: session.org,
          q,
          attribute,
          error,
          pageSize: PAGE_SIZE,
          pager: pagerOf('/dashboard/end-users', { q, attribute }, page),
          rows: page.data.map((u) => ({
            id: u._id,
            name: u.name ?? '—',
            email: u.email ?? '—',
            phone: u.phone ?? '—',
            tags: u.tags.length > 0 ? u.tags.join(', ') : '—',
            attributes:
              Object.keys(u.attributes).length > 0
                ? Object.entries(u.attributes)
                    .map(([k, v]) => `${k}: ${String(v)}`)
                    .join(', ')
                : '—',
            origin: u.origin,
            created: formatTime(u.createdAt),
            lastSeen: u.lastSeenAt === null ? 'Never' : formatTime(u.lastSeenAt),
          })),
        },
        undefined,
      ),
      error ? 400 : 200,
    );
  });
}
