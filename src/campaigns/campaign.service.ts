import type { Kysely } from 'kysely';
import type { CampaignTable, DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';

export interface Campaign {
  id: string;
  orgId: string;
  name: string;
  createdAt: number;
}

const toCampaign = (row: CampaignTable): Campaign => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  createdAt: row.created_at,
});

export async function createCampaign(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; name: string },
): Promise<Campaign> {
  await getOrganization(db, input.orgId);
  const name = input.name.trim();
  if (!name) throw new AppError('INVALID_BODY', 'campaign name must not be empty');
  const row: CampaignTable = { id: newId('cmp'), org_id: input.orgId, name, created_at: clock.now() };
  await db.insertInto('campaigns').values(row).execute();
  return toCampaign(row);
}

export async function findCampaign(db: Kysely<DB>, orgId: string, campaignId: string): Promise<Campaign | undefined> {
  const row = await db
    .selectFrom('campaigns')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', campaignId)
    .executeTakeFirst();
  return row ? toCampaign(row) : undefined;
}
