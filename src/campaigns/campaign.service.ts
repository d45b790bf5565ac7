import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import { TEMPLATE_LANGUAGE } from '../channels/channel.schemas.js';
import type { CampaignTable, DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { getOrganization } from '../orgs/org.service.js';
import { checkTemplateOfNumber } from '../policies/template-check.service.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { CAMPAIGN_DISPATCH_QUEUE, type CampaignDispatchJob } from './campaign.queues.js';
import {
  type DeliveryStatus,
  deleteCampaignAndKeys,
  findCampaignRow,
  insertCampaign,
  listCampaignRows,
  setCampaignStatus,
} from './campaign.repository.js';
import { countDeliveries } from './campaign-list.repository.js';

export interface TemplateParameterLists {
  body?: string[];
  header?: string[];
}

export interface Campaign {
  id: string;
  orgId: string;
  name: string;
  agentId: string | null;
  template: string | null;
  language: string | null;
  parameters: TemplateParameterLists | null;
  status: CampaignTable['status'];
  /** Why Parley paused it (the number turned RED); null when active or paused by a person. */
  pausedReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export type DeliveryCounts = Record<DeliveryStatus, number>;

export const parseParameters = (text: string | null): TemplateParameterLists | null =>
  text === null ? null : (JSON.parse(text) as TemplateParameterLists);

export const toCampaign = (row: CampaignTable): Campaign => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  agentId: row.agent_id,
  template: row.template_name,
  language: row.template_language,
  parameters: parseParameters(row.default_parameters),
  status: row.status,
  pausedReason: row.paused_reason ?? null,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at ?? row.created_at),
});

export interface CreateCampaignInput {
  orgId: string;
  name: string;
  /** The agent whose number sends, with the template; all three or none (a campaign that cannot send yet). */
  agentId?: string | undefined;
  template?: string | undefined;
  language?: string | undefined;
  parameters?: TemplateParameterLists | undefined;
  /** Who creates it (`cli`, a dashboard user): recorded in the audit log with the campaign. */
  actor?: string | undefined;
}

export async function createCampaign(db: Kysely<DB>, clock: Clock, input: CreateCampaignInput): Promise<Campaign> {
  await getOrganization(db, input.orgId);
  const name = input.name.trim();
  if (!name) throw new AppError('INVALID_BODY', 'campaign name must not be empty');
  if (name.length > 200) throw new AppError('INVALID_BODY', 'campaign name must be at most 200 characters');
  const sends = input.agentId !== undefined || input.template !== undefined || input.language !== undefined;
  if (sends) {
    if (!input.agentId || !input.template || !input.language) {
      throw new AppError(
        'INVALID_BODY',
        'a campaign needs an agent (--agent), a template (--template) and its language',
      );
    }
    const agent = await findAgent(db, input.orgId, input.agentId);
    if (!agent) {
      throw new AppError('NOT_FOUND', `unknown agent "${clip(input.agentId, 64)}" in organization ${input.orgId}`);
    }
    if (!input.template.trim() || input.template.length > 512) {
      throw new AppError('INVALID_BODY', 'template name must be 1 to 512 characters');
    }
    if (!TEMPLATE_LANGUAGE.test(input.language)) {
      throw new AppError('INVALID_BODY', `language must look like en_US (xx_XX), got "${clip(input.language, 20)}"`);
    }
    // As a send would be refused: an unknown or unapproved template, or wrong default parameters.
    await checkTemplateOfNumber(db, {
      orgId: input.orgId,
      numberId: agent.numberId,
      name: input.template,
      language: input.language,
      ...(input.parameters ? { header: input.parameters.header ?? [], body: input.parameters.body ?? [] } : {}),
    });
  }
  const now = clock.now();
  const row: CampaignTable = {
    id: newId('cmp'),
    org_id: input.orgId,
    name,
    created_at: now,
    agent_id: input.agentId ?? null,
    template_name: input.template ?? null,
    template_language: input.language ?? null,
    default_parameters: input.parameters ? JSON.stringify(input.parameters) : null,
    status: 'active',
    updated_at: now,
    paused_reason: null,
  };
  const actor = input.actor;
  await inTransaction(db, async (trx) => {
    await insertCampaign(trx, row);
    if (actor) {
      await auditCampaign(trx, row, actor, 'campaign.created', now, {
        agentId: row.agent_id,
        template: row.template_name,
        language: row.template_language,
      });
    }
  });
  return toCampaign(row);
}

export async function findCampaign(db: Kysely<DB>, orgId: string, campaignId: string): Promise<Campaign | undefined> {
  const row = await findCampaignRow(db, orgId, campaignId);
  return row ? toCampaign(row) : undefined;
}

/** The campaign or a 404 sentence. */
export async function getCampaign(db: Kysely<DB>, orgId: string, campaignId: string): Promise<Campaign> {
  const campaign = await findCampaign(db, orgId, campaignId);
  if (!campaign) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  return campaign;
}

export async function listCampaigns(db: Kysely<DB>, orgId: string): Promise<Campaign[]> {
  await getOrganization(db, orgId);
  return (await listCampaignRows(db, orgId)).map(toCampaign);
}

export async function campaignWithCounts(
  db: Kysely<DB>,
  orgId: string,
  campaignId: string,
): Promise<Campaign & { counts: DeliveryCounts }> {
  const campaign = await getCampaign(db, orgId, campaignId);
  return { ...campaign, counts: await countDeliveries(db, campaign.id) };
}

/** Stops new sends of the campaign (within a second: every send reads the status first). */
export async function pauseCampaign(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  campaignId: string,
  actor?: string,
): Promise<Campaign> {
  const row = await inTransaction(db, async (trx) => {
    const updated = await setCampaignStatus(trx, orgId, campaignId, 'paused', clock.now());
    if (updated && actor) await auditCampaign(trx, updated, actor, 'campaign.paused', clock.now());
    return updated;
  });
  if (!row) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  return toCampaign(row);
}

/**
 * Sends again: the status and a job that queues the deliveries still waiting (their jobs ended
 * while the campaign was paused) are written together, so a resume is never half done.
 */
export async function resumeCampaign(
  db: Kysely<DB>,
  jobs: JobRunner,
  clock: Clock,
  orgId: string,
  campaignId: string,
  actor?: string,
): Promise<Campaign> {
  const row = await inTransaction(db, async (trx) => {
    const updated = await setCampaignStatus(trx, orgId, campaignId, 'active', clock.now());
    if (!updated) return undefined;
    await jobs.enqueue<CampaignDispatchJob>(CAMPAIGN_DISPATCH_QUEUE, { campaignId }, { db: trx });
    if (actor) await auditCampaign(trx, updated, actor, 'campaign.resumed', clock.now());
    return updated;
  });
  if (!row) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  return toCampaign(row);
}

/** One entry of the audit log about a campaign: its name, and what else the action carries. */
function auditCampaign(
  trx: Kysely<DB>,
  row: { org_id: string; id: string; name: string },
  actor: string,
  action: 'campaign.created' | 'campaign.paused' | 'campaign.resumed' | 'campaign.removed',
  at: number,
  details: Record<string, unknown> = {},
): Promise<void> {
  return recordAudit(trx, {
    orgId: row.org_id,
    actor,
    action,
    targetType: 'campaign',
    targetId: row.id,
    details: { name: row.name, ...details },
    at,
  });
}

/** What a removal took with it. */
export interface RemovedCampaign {
  id: string;
  name: string;
  removed: true;
  /** The campaign's keys, deleted with it: the next request with any of them is a 401. */
  keys: number;
  /** Deliveries still queued, never sent now (one already being sent finishes). */
  unsent: number;
}

/**
 * Removes a campaign for good, in one transaction: its keys (refused on the very next request on
 * every node: deleting a key moves the key epoch), its deliveries and dedupe keys. Messages it
 * already sent, and their conversations, stay (a conversation keeps the campaign's ID). A delivery
 * job that runs later finds nothing and ends; a send already in the provider's hands finishes.
 */
export async function removeCampaign(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; campaignId: string; actor?: string | undefined },
): Promise<RemovedCampaign> {
  return inTransaction(db, async (trx) => {
    const row = await findCampaignRow(trx, input.orgId, input.campaignId);
    if (!row) {
      throw new AppError('NOT_FOUND', `No campaign with ID '${clip(input.campaignId, 64)}' in this organization.`);
    }
    const counts = await countDeliveries(trx, row.id);
    // Deliveries and dedupe keys go with the campaign (ON DELETE CASCADE).
    const keys = await deleteCampaignAndKeys(trx, row.org_id, row.id);
    const removed: RemovedCampaign = {
      id: row.id,
      name: row.name,
      removed: true,
      keys,
      unsent: counts.queued,
    };
    if (input.actor) {
      await auditCampaign(trx, row, input.actor, 'campaign.removed', clock.now(), {
        keys: removed.keys,
        unsent: removed.unsent,
      });
    }
    return removed;
  });
}
