import { findAgent } from '../agents/agent.service.js';
import { assertCampaignKey, type Principal } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { judgeTemplateSend } from '../policies/index.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { checkRecipient } from './accept-recipients.js';
import { findCampaignRow, findDedupeKeys } from './campaign.repository.js';
import type { CampaignWebhookBody, RecipientCheckResponse, RecipientCheckResult } from './campaign.schemas.js';

/**
 * POST /api/campaigns/<id>/webhook/check: what the webhook would answer for each recipient
 * (`queued`, `duplicate`, `rejected` with the reason) and, for a queued one, whether its delivery
 * would go out or fail (the template catalogue, the recipient's consent: `opted_out`), queuing
 * nothing, storing no dedupe key and counting no limit. The campaign's state answers as the
 * webhook's does (404, 409).
 */
export async function checkRecipients(
  ctx: AppContext,
  principal: Principal,
  campaignId: string,
  body: CampaignWebhookBody,
): Promise<RecipientCheckResponse> {
  assertCampaignKey(principal, campaignId);
  const campaign = await findCampaignRow(ctx.db, principal.orgId, campaignId);
  if (!campaign) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  if (campaign.status === 'paused') {
    throw new AppError('CONFLICT', 'This campaign is paused; recipients are accepted again once it is resumed.');
  }
  if (!campaign.agent_id || !campaign.template_name || !campaign.template_language) {
    throw new AppError(
      'CONFLICT',
      'This campaign has no agent and template to send with, so it cannot take recipients.',
    );
  }
  const agent = await findAgent(ctx.db, principal.orgId, campaign.agent_id);
  const checked = body.recipients.map((value, index) => ({ index, checked: checkRecipient(value, index) }));
  const keys = checked.flatMap((c) =>
    c.checked.ok && c.checked.recipient.dedupeKey !== undefined ? [c.checked.recipient.dedupeKey] : [],
  );
  const stored = keys.length > 0 ? await findDedupeKeys(ctx.db, campaign.id, keys) : new Map<string, string>();
  const seen = new Set<string>();
  const defaults = campaign.default_parameters
    ? (JSON.parse(campaign.default_parameters) as { header?: string[]; body?: string[] })
    : {};
  const results: RecipientCheckResult[] = [];
  for (const { index, checked: c } of checked) {
    if (!c.ok) {
      results.push({ index, status: 'rejected', error: c.error });
      continue;
    }
    const key = c.recipient.dedupeKey;
    if (key !== undefined && (seen.has(key) || stored.has(key))) {
      results.push({ index, status: 'duplicate', ...(stored.has(key) ? { deliveryId: stored.get(key) } : {}) });
      continue;
    }
    if (key !== undefined) seen.add(key);
    const params =
      c.recipient.parameters?.body?.length || c.recipient.parameters?.header?.length
        ? c.recipient.parameters
        : defaults;
    if (!agent?.numberId) {
      results.push({
        index,
        status: 'queued',
        delivery: 'failed',
        reason: "The campaign's agent has no messaging number.",
      });
      continue;
    }
    const verdict = await judgeTemplateSend(ctx, {
      orgId: principal.orgId,
      numberId: agent.numberId,
      to: c.to,
      name: campaign.template_name,
      language: campaign.template_language,
      header: params?.header ?? [],
      body: params?.body ?? [],
    });
    const problem = verdict.problems.template ?? verdict.problems.parameters;
    if (problem) results.push({ index, status: 'queued', delivery: 'failed', reason: problem });
    else if (verdict.problems.consent)
      results.push({ index, status: 'queued', delivery: 'failed', reason: 'opted_out' });
    else results.push({ index, status: 'queued', delivery: 'sent' });
  }
  return {
    success: true,
    accepted: results.filter((r) => r.status === 'queued').length,
    duplicates: results.filter((r) => r.status === 'duplicate').length,
    rejected: results.filter((r) => r.status === 'rejected').length,
    results,
  };
}
