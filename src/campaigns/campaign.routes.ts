import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { assertCampaignKey } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { IDEMPOTENCY_RESPONSE_HEADERS, IdempotencyHeaders, idempotency } from '../idempotency/index.js';
import { RATE_LIMIT_HEADERS, rateLimit, rateLimitedResponse, withHeaders } from '../rate-limit/index.js';
import { acceptRecipients, listCampaignDeliveries } from './accept-recipients.js';
import {
  CampaignParams,
  CampaignResponse,
  CampaignWebhookBody,
  CampaignWebhookResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  RecipientCheckResponse,
} from './campaign.schemas.js';
import { campaignWithCounts } from './campaign.service.js';
import { checkRecipients } from './check-recipients.service.js';

/**
 * The campaign endpoints: only the key bound to the campaign of the path may call them (403 for
 * any other key, even one holding Campaigns), checked before the body is read and before the
 * campaign limits count a post; those limits are their own, per key and per organization.
 */
export const campaignRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const idem = idempotency(ctx, 'POST /api/campaigns/webhook');
  const ownCampaign = async (request: FastifyRequest, _reply: FastifyReply) => {
    const { campaignId } = request.params as { campaignId: string };
    assertCampaignKey(principalOf(request), campaignId);
  };
  // Reads are not counted: a caller polling a campaign's progress must not use up its posting budget.
  const onRequest = [requireKey(ctx, 'campaigns'), ownCampaign];

  app.post(
    '/api/campaigns/:campaignId/webhook',
    {
      config: { family: 'channel' },
      onRequest: [...onRequest, rateLimit({ sendRateLimiter: ctx.campaignRateLimiter })],
      preHandler: idem.preHandler,
      onSend: idem.onSend,
      schema: {
        summary: 'Add recipients to a webhook campaign',
        description:
          "Takes 1 to 1,000 recipients; each becomes a delivery of the campaign's template from its agent's number, " +
          'paced per sending number. Answered 202 once the accepted deliveries are stored durably, with a result per ' +
          'recipient: `queued` (with its delivery ID), `duplicate` (a `dedupeKey` seen in this campaign in the last ' +
          '30 days; the ID of the first delivery) or `rejected` (with the reason; the others go on). Only the key ' +
          'bound to this campaign may call it. A paused campaign answers 409.',
        tags: ['campaigns'],
        security: BEARER,
        headers: IdempotencyHeaders,
        params: CampaignParams,
        body: CampaignWebhookBody,
        response: {
          202: withHeaders(CampaignWebhookResponse, { ...RATE_LIMIT_HEADERS, ...IDEMPOTENCY_RESPONSE_HEADERS }),
          ...errorResponses('channel', [400, 401, 403, 404, 409, 413, 422]),
          ...rateLimitedResponse('channel'),
        },
      },
    },
    async (request, reply) => {
      const body = await acceptRecipients(ctx, principalOf(request), request.params.campaignId, request.body);
      return reply.code(202).send(body);
    },
  );

  app.post(
    '/api/campaigns/:campaignId/webhook/check',
    {
      config: { family: 'channel' },
      // A check counts no limit and stores nothing.
      onRequest,
      schema: {
        summary: 'Check recipients without queuing them',
        description:
          'Takes the body of POST /api/campaigns/{id}/webhook and answers what the webhook would, per recipient ' +
          '(`queued`, `duplicate`, `rejected`), and for each queued one whether its delivery would reach the provider ' +
          '(`delivery: "sent"`) or fail before it (`failed`, with the reason: `opted_out`, or the template catalogue\'s ' +
          'sentence). Nothing is queued, no dedupe key is stored, no limit is counted.',
        tags: ['campaigns'],
        security: BEARER,
        params: CampaignParams,
        body: CampaignWebhookBody,
        response: { 200: RecipientCheckResponse, ...errorResponses('channel', [400, 401, 403, 404, 409, 413]) },
      },
    },
    async (request) => checkRecipients(ctx, principalOf(request), request.params.campaignId, request.body),
  );

  app.get(
    '/api/campaigns/:campaignId',
    {
      config: { family: 'channel' },
      onRequest,
      schema: {
        summary: 'A webhook campaign and its deliveries by status',
        tags: ['campaigns'],
        security: BEARER,
        params: CampaignParams,
        response: {
          200: CampaignResponse,
          ...errorResponses('channel', [400, 401, 403, 404]),
        },
      },
    },
    async (request) => {
      const {
        orgId: _orgId,
        parameters: _parameters,
        ...campaign
      } = await campaignWithCounts(ctx.db, principalOf(request).orgId, request.params.campaignId);
      return campaign;
    },
  );

  app.get(
    '/api/campaigns/:campaignId/deliveries',
    {
      config: { family: 'channel' },
      onRequest,
      schema: {
        summary: "A webhook campaign's deliveries",
        description: 'Oldest first; `status` filters, `nextCursor` pages (null on the last page).',
        tags: ['campaigns'],
        security: BEARER,
        params: CampaignParams,
        querystring: DeliveriesQuery,
        response: {
          200: DeliveriesResponse,
          ...errorResponses('channel', [400, 401, 403, 404]),
        },
      },
    },
    async (request) => listCampaignDeliveries(ctx, principalOf(request), request.params.campaignId, request.query),
  );
};
