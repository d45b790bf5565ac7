import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { CodedError, errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import { verifySignature } from './webhook-signature.js';

/** The verify token travels in the query string: it must never reach a log line with the URL. */
export function redactVerifyToken(url: string): string {
  return url.replace(/([?&]hub\.verify_token=)[^&#]*/gi, '$1[redacted]');
}

/**
 * The request serializer of these routes' log lines: Fastify's own fields, the URL without the
 * verify token (a route-level serializer, so no other route pays for it).
 */
const logSerializers = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: redactVerifyToken(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};

/** The shape of a provider webhook, for the OpenAPI description only (the body is read as raw bytes). */
const WebhookBody = Type.Object(
  {
    object: Type.String({ examples: ['whatsapp_business_account'] }),
    entry: Type.Array(
      Type.Object({
        id: Type.String(),
        changes: Type.Array(
          Type.Object({
            field: Type.String({ examples: ['messages'] }),
            value: Type.Object(
              {
                metadata: Type.Optional(
                  Type.Object({ display_phone_number: Type.String(), phone_number_id: Type.String() }),
                ),
                contacts: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
                messages: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
                statuses: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
              },
              { additionalProperties: true },
            ),
          }),
        ),
      }),
    ),
  },
  {
    title: 'ProviderWebhook',
    description:
      "The provider's webhook envelope: inbound messages (`value.messages`, routed by `metadata.phone_number_id`) " +
      'and delivery statuses (`value.statuses`). Signed over these exact bytes.',
  },
);

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
      logSerializers,
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
          // The challenge goes back as plain text, as the provider expects, not as a JSON string.
          200: {
            description: 'The challenge, as sent.',
            content: { 'text/plain': { schema: Type.String({ title: 'ProviderWebhookChallenge' }) } },
          },
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
      logSerializers,
      // The body stays raw bytes (the signature is over them): the schema below documents it, the
      // handler checks it. Only the signature header is validated, by hand.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Provider webhook: inbound messages and delivery statuses',
        description:
          'Signed with `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>`, ' +
          'checked first (an unsigned request is 401 whatever its body). Stored, then acknowledged; every entry, ' +
          'change, message and status is then processed, duplicates ignored, odd values skipped item by item. ' +
          'Work that keeps failing, or an inbound message for an unknown phone number ID, is kept for an ' +
          'operator to replay (`parley webhooks failed`, `parley webhooks retry`).',
        tags: ['webhooks'],
        security: [],
        consumes: ['application/json'],
        headers: Type.Object({ 'x-hub-signature-256': Type.Optional(Type.String()) }),
        body: WebhookBody,
        response: {
          200: Type.Object(
            { received: Type.Integer({ description: 'Messages and statuses queued.' }) },
            { title: 'ProviderWebhookReceived' },
          ),
          ...errorResponses('coded', [400, 413]),
          401: Type.Ref(CodedError, {
            description:
              'UNAUTHORIZED: missing or invalid X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret).',
          }),
        },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = request.headers['x-hub-signature-256'];
      if (!verifySignature(ctx.messaging.appSecret, raw, typeof signature === 'string' ? signature : undefined)) {
        throw new AppError('UNAUTHORIZED', 'Missing or invalid X-Hub-Signature-256.');
      }
      if (raw.length === 0) throw new AppError('INVALID_BODY', 'The webhook body is empty.');
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
