import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { mediaHeaders, readMedia } from './media-read.service.js';

const MediaIdParams = Type.Object({
  mediaId: Type.String({ minLength: 1, maxLength: 64, description: 'The media ID (`med_...`).' }),
});

const MediaBytes = Type.Unsafe<Readable>({
  title: 'MediaBytes',
  type: 'string',
  format: 'binary',
  description: "A file's bytes, served with its own `Content-Type` (`image/jpeg`, `application/pdf`...).",
  example: '<the bytes of the file>',
});

/** `GET /api/media/<mediaId>`: the bytes of a file, streamed from the media store. */
export const mediaDownloadRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const deps = {
    db: ctx.db,
    store: ctx.mediaStore,
    logger: ctx.logger,
    retentionDays: ctx.config.media.retentionDays,
  };
  app.get(
    '/api/media/:mediaId',
    {
      config: { family: 'channel' },
      onRequest: requireKey(ctx, ['channels', 'triggers']),
      schema: {
        summary: 'Download a file',
        description:
          'The bytes of a file a user sent (the `media.url` of `message.received`, the `media.id` of a conversation ' +
          'message) or one uploaded, streamed with its stored `Content-Type`, `Content-Length`, an `ETag` (its SHA-256) ' +
          'and `X-Content-Type-Options: nosniff`. Images (JPEG, PNG, WebP, GIF) come `inline`; everything else, SVG and ' +
          'HTML included, as an `attachment` with its file name. Permission Channels or Triggers; an organization key, ' +
          'or the agent key of the agent whose conversation holds the file: any other file is 404, as if absent. A file ' +
          `still downloading, one that could not be downloaded, or one past its retention (PARLEY_MEDIA_RETENTION_DAYS, ` +
          'default 30) is 404 with a sentence saying so.',
        tags: ['media'],
        security: BEARER,
        params: MediaIdParams,
        response: {
          200: {
            description: "The file's bytes, with its stored `Content-Type`.",
            content: { 'application/octet-stream': { schema: MediaBytes } },
          },
          ...errorResponses('channel', [400, 401, 403, 404]),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { media, bytes } = await readMedia(
        deps,
        { orgId: principal.orgId, agentId: principal.scope === 'agent' ? principal.agentId : null },
        request.params.mediaId,
      );
      return reply.headers(mediaHeaders(media, bytes.size)).send(bytes.body);
    },
  );
};
