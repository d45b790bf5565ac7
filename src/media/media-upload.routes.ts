import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import { uploadMedia } from './media-upload.service.js';
import { MAX_UPLOAD_BYTES } from './upload-types.js';

export const UploadedMedia = Type.Object(
  {
    id: Type.String({ description: 'The media ID (`med_...`): `message.media.id` of a send, `GET /api/media/{id}`.' }),
    mimeType: Type.String({ description: 'The type, as the bytes say.' }),
    size: Type.Integer({ description: 'Bytes.' }),
    sha256: Type.String({ description: 'Lower-case hex SHA-256 of the bytes.' }),
    filename: Type.Union([Type.String(), Type.Null()], {
      description: 'The file name of the upload, without folders.',
    }),
  },
  {
    title: 'UploadedMedia',
    examples: [
      {
        id: 'med_4ZpQ8sKq2nLm6RtPz0XcVa',
        mimeType: 'application/pdf',
        size: 48213,
        sha256: '9b1c3f0a8c2e5d1b7a9f4c6e8d0b2a4c6e8f0a2c4e6a8c0e2a4c6e8a0c2e4a6c',
        filename: 'invoice-A1042.pdf',
      },
    ],
  },
);

const UploadBody = Type.Unsafe<unknown>({
  title: 'MediaUpload',
  type: 'object',
  example: { file: '<the bytes of the file>' },
  required: ['file'],
  properties: { file: { type: 'string', format: 'binary', description: 'The file.' } },
});

const NOT_MULTIPART = new Set(['FST_INVALID_MULTIPART_CONTENT_TYPE', 'FST_NO_FORM_DATA']);

/** `POST /api/media`: a file to send, streamed to the media store. */
export const mediaUploadRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  // Only this plugin reads multipart bodies; one file, at most the largest accepted size.
  await app.register(multipart, { limits: { files: 1, fields: 10, parts: 11, fileSize: MAX_UPLOAD_BYTES } });
  const deps = { db: ctx.db, store: ctx.mediaStore, clock: ctx.clock };
  app.post(
    '/api/media',
    {
      config: { family: 'channel' },
      onRequest: requireKey(ctx, 'channels'),
      schema: {
        summary: 'Upload a file to send',
        description:
          '`multipart/form-data` with the file in the field `file`. Accepted as the provider accepts them: ' +
          '`image/jpeg`, `image/png` up to 5 MB; `video/mp4`, `video/3gpp` up to 16 MB; `audio/aac`, `audio/amr`, ' +
          '`audio/mpeg`, `audio/mp4`, `audio/ogg` up to 16 MB; documents (`application/pdf`, the Office types, ' +
          '`text/plain`) up to 100 MB. The bytes decide the type: a file whose bytes are not its declared type is ' +
          '400, one over its limit 413, and nothing is kept on any error. The file streams to the media store. ' +
          'Permission Channels; an organization key, or an agent key (then that agent alone may send it). Send it ' +
          'with `message.media.id` (or `template.headerMedia.id`) of POST /api/channels/send.',
        tags: ['media'],
        security: BEARER,
        consumes: ['multipart/form-data'],
        body: UploadBody,
        response: {
          201: UploadedMedia,
          ...errorResponses('channel', [400, 401, 403, 413]),
        },
      },
      // The body is a stream read by the handler, not a parsed object the schema could check.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const principal = principalOf(request);
      let file: Awaited<ReturnType<typeof request.file>>;
      try {
        file = await request.file();
      } catch (err) {
        if (NOT_MULTIPART.has((err as { code?: string }).code ?? '')) {
          throw new AppError(
            'INVALID_BODY',
            "POST /api/media takes multipart/form-data with the file in the field 'file'.",
          );
        }
        throw err;
      }
      if (!file) throw new AppError('INVALID_BODY', "The body holds no file: send it in the multipart field 'file'.");
      if (file.fieldname !== 'file') {
        file.file.resume();
        throw new AppError(
          'INVALID_BODY',
          `The file must be in the field 'file', not '${file.fieldname.slice(0, 40)}'.`,
        );
      }
      const media = await uploadMedia(
        deps,
        { orgId: principal.orgId, agentId: principal.scope === 'agent' ? principal.agentId : null },
        { body: file.file, declaredType: file.mimetype, filename: file.filename },
      );
      return reply.code(201).send({
        id: media.id,
        mimeType: media.mimeType,
        size: media.size ?? 0,
        sha256: media.sha256 ?? '',
        filename: media.filename,
      });
    },
  );
};
