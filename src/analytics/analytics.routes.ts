import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { assertCampaignKey } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { CampaignStatsQuery, CampaignStatsResponse } from './analytics.schemas.js';
import { campaignStats } from './analytics.service.js';

/** GET /api/campaigns/<id>/stats: the campaign's key only, as every campaign endpoint. */
export const analyticsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ownCampaign = async (request: FastifyRequest, _reply: FastifyReply) => {
    const { campaignId } = request.params as { campaignId: string };
    assertCampaignKey(principalOf(request), campaignId);
  };
  app.get(
    '/api/campaigns/:campaignId/stats',
    {
      config: { family: 'channel' },
      onRequest: [requireKey(ctx, 'campaigns'), ownCampaign],
      schema: {
        summary: "A campaign's funnel, deliveries over time and failures",
        description:
          'Read from counters kept as deliveries and messages change, so it answers as fast for a million ' +
          'deliveries as for ten. Buckets are UTC hours or days; they add up to the totals (accepted aside).',
        tags: ['campaigns'],
        security: BEARER,
        params: Type.Object({ campaignId: Type.String() }),
        querystring: CampaignStatsQuery,
        response: { 200: CampaignStatsResponse, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) =>
      campaignStats(ctx.db, principalOf(request).orgId, request.params.campaignId, request.query.bucket ?? 'day'),
  );
};
