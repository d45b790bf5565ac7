import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { assertCampaignKey } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { CampaignParams } from './campaign.schemas.js';
import { SegmentSendBody, SegmentSendParams, SegmentSendResponse } from './segment-send.schemas.js';
import { segmentSendsForKey } from './segment-send.service.js';

/**
 * /api/campaigns/<id>/sends: the campaign sent to a segment, now or later. Like every campaign
 * endpoint: only the key bound to the campaign, the `{"success": false, "error"}` envelope.
 */
export const segmentSendRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ownCampaign = async (request: FastifyRequest, _reply: FastifyReply) => {
    const { campaignId } = request.params as { campaignId: string };
    assertCampaignKey(principalOf(request), campaignId);
  };
  const onRequest = [requireKey(ctx, 'campaigns'), ownCampaign];
  const config = { family: 'channel' as const };

  app.post(
    '/api/campaigns/:campaignId/sends',
    {
      config,
      onRequest,
      schema: {
        summary: 'Send the campaign to a segment, now or at a time',
        description:
          'Answered 202 once the send is stored with its job. At `at` (or at once) the segment is read once, on one ' +
          "node, and each member becomes a delivery of the campaign as if posted to its webhook (the member's " +
          'msgapp identifier, else its phone; members whose msgapp consent is denied, or without a phone, are ' +
          'counted and skipped; one delivery per member and send). A paused campaign keeps the deliveries queued ' +
          'until it is resumed.',
        tags: ['campaigns'],
        security: BEARER,
        params: CampaignParams,
        body: SegmentSendBody,
        response: { 202: SegmentSendResponse, ...errorResponses('channel', [400, 401, 403, 404, 409, 413]) },
      },
    },
    async (request, reply) => {
      const send = await segmentSendsForKey.schedule(
        ctx,
        principalOf(request),
        request.params.campaignId,
        request.body,
      );
      return reply.code(202).send(send);
    },
  );

  app.get(
    '/api/campaigns/:campaignId/sends/:sendId',
    {
      config,
      onRequest,
      schema: {
        summary: 'A send of the campaign to a segment: its status and counts',
        tags: ['campaigns'],
        security: BEARER,
        params: SegmentSendParams,
        response: { 200: SegmentSendResponse, ...errorResponses('channel', [401, 403, 404]) },
      },
    },
    async (request) =>
      segmentSendsForKey.get(ctx.db, principalOf(request), request.params.campaignId, request.params.sendId),
  );

  app.delete(
    '/api/campaigns/:campaignId/sends/:sendId',
    {
      config,
      onRequest,
      schema: {
        summary: 'Cancel a scheduled send',
        description: 'Only before it runs: 409 once it is running or done. Canceling a canceled send answers it again.',
        tags: ['campaigns'],
        security: BEARER,
        params: SegmentSendParams,
        response: { 200: SegmentSendResponse, ...errorResponses('channel', [401, 403, 404, 409]) },
      },
    },
    async (request) =>
      segmentSendsForKey.cancel(ctx, principalOf(request), request.params.campaignId, request.params.sendId),
  );
};
