import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import { verifySignature } from './webhook.service.js';

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The provider's webhook. This plugin is encapsulated: its own content-type parser keeps the raw
 * bytes, because the signature is over exactly those bytes (the provider escapes non-ASCII before
 * signing, so a re-serialised body would not match).
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.get(
    '/webhooks/msgapp',
    {
      schema: {
        summary: 'Provider webhook verification handshake',
        description:
          'Answers the challenge when `hub.mode` is `subscribe` and `hub.verify_token` equals PARLEY_WEBHOOK_VERIFY_TOKEN.',
        tags: ['webhooks'],
        security: [],
        querystring: Type.Object({
          'hub.mode': Type.Optional(Type.String()),
          'hub.verify_token': Type.Optional(Type.String()),
          'hub.challenge': Type.Optional(Type.String()),
        }),
        response: {
          200: Type.String({ description: 'The challenge, as sent.' }),
          ...errorResponses('coded', [403]),
        },
      },
    },
    async (request, reply) => {
      const expected = ctx.config.messaging.webhookVerifyToken;
      const q = request.query;
      if (
        expected === undefined ||
        q['hub.mode'] !== 'subscribe' ||
        q['hub.verify_token'] === undefined ||
        !sameText(q['hub.verify_token'], expected)
      ) {
        throw new AppError('FORBIDDEN', 'The verify token does not match.');
      }
      return reply.type('text/plain').send(q['hub.challenge'] ?? '');
    },
  );

  app.post(
    '/webhooks/msgapp',
    {
      schema: {
        summary: 'Provider webhook: inbound messages and delivery statuses',
        description:
          'Signed with `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>`. ' +
          'Stored, then acknowledged; every entry, change, message and status is then processed, duplicates ignored. ' +
          'A body not fully processed when the server stops is processed at its next start.',
        tags: ['webhooks'],
        security: [],
        headers: Type.Object({ 'x-hub-signature-256': Type.Optional(Type.String()) }),
        response: {
          200: Type.Object({ received: Type.Integer({ description: 'Messages and statuses queued.' }) }),
          ...errorResponses('coded', [400, 401, 413]),
        },
      },
    },
    async (request) => {
      const raw = request.body;
      if (!Buffer.isBuffer(raw)) throw new AppError('INVALID_BODY', 'The webhook body is empty.');
      const signature = request.headers['x-hub-signature-256'];
      if (!verifySignature(ctx.messaging.appSecret, raw, typeof signature === 'string' ? signature : undefined)) {
        throw new AppError('UNAUTHORIZED', 'Missing or invalid X-Hub-Signature-256.');
      }
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new AppError('INVALID_BODY', 'The webhook body is not valid JSON.');
      }
      return { received: await ctx.messaging.webhooks.receive(raw.toString('utf8'), payload) };
    },
  );
};
