import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { mediaHeaders, readMedia } from '../media/index.js';
import type { PageKit } from './page-kit.js';

/** Where the dashboard fetches a file of the signed-in person's organization. */
export const dashboardMediaPath = (mediaId: string) => `/dashboard/media/${encodeURIComponent(mediaId)}`;

/**
 * The files of a conversation, for the conversation view (an image shown inline, any other file a
 * download): authorized by the dashboard session, never an API key, and only within the person's
 * organization. Served as `GET /api/media/<id>` serves them (type, size, ETag, nosniff, images
 * inline and everything else as an attachment).
 */
export function registerMediaPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const deps = {
    db: ctx.db,
    store: ctx.mediaStore,
    logger: ctx.logger,
    retentionDays: ctx.config.media.retentionDays,
  };
  app.get('/dashboard/media/:id', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { id } = request.params as { id: string };
    const { media, bytes } = await readMedia(deps, { orgId: session.org.id, agentId: null }, id.slice(0, 64));
    reply.header('cache-control', 'private, max-age=300');
    return reply.headers(mediaHeaders(media, bytes.size)).send(bytes.body);
  });
}
