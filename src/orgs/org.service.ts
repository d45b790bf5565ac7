import type { Kysely } from 'kysely';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import type { DB, OrganizationTable } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  findOrganizationPlan,
  findOrganizationRow,
  insertOrganization,
  listOrganizationRows,
  setDefaultCountry,
  setPlan,
} from './org.repository.js';

export type Plan = OrganizationTable['plan'];
export const PLANS: readonly Plan[] = ['free', 'paid'];

export interface Organization {
  id: string;
  name: string;
  plan: Plan;
  defaultCountry: string | null;
  createdAt: number;
}

const toOrganization = (row: OrganizationTable): Organization => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  defaultCountry: row.default_country,
  createdAt: row.created_at,
});

function checkPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw new AppError('INVALID_BODY', `plan must be one of ${PLANS.join(', ')}, got "${plan}"`);
  }
  return plan as Plan;
}

function checkCountry(country: string | undefined): string | null {
  if (country === undefined) return null;
  if (!/^[A-Z]{2}$/.test(country)) {
    throw new AppError('INVALID_BODY', `default country must be a two-letter ISO code such as US, got "${country}"`);
  }
  return country;
}

export async function createOrganization(
  db: Kysely<DB>,
  clock: Clock,
  input: { name: string; plan: string; defaultCountry?: string },
): Promise<Organization> {
  const name = input.name.trim();
  if (!name) throw new AppError('INVALID_BODY', 'organization name must not be empty');
  const row: OrganizationTable = {
    id: newId('org'),
    name,
    plan: checkPlan(input.plan),
    default_country: checkCountry(input.defaultCountry?.toUpperCase()),
    created_at: clock.now(),
  };
  await insertOrganization(db, row);
  return toOrganization(row);
}

export async function getOrganization(db: Kysely<DB>, orgId: string): Promise<Organization> {
  const row = await findOrganizationRow(db, orgId);
  if (!row) throw new AppError('NOT_FOUND', `unknown organization "${orgId}"`);
  return toOrganization(row);
}

/** Changes the plan; with `audit`, a real change is recorded in the audit log in the same transaction. */
export async function setOrganizationPlan(
  db: Kysely<DB>,
  orgId: string,
  plan: string,
  audit?: { actor: string; clock: Clock },
): Promise<Organization> {
  const checked = checkPlan(plan);
  await inTransaction(db, async (trx) => {
    const before = await findOrganizationPlan(trx, orgId);
    if (!before) throw new AppError('NOT_FOUND', `unknown organization "${orgId}"`);
    await setPlan(trx, orgId, checked);
    if (audit && before.plan !== checked) {
      await recordAudit(trx, {
        orgId,
        actor: audit.actor,
        action: 'plan.changed',
        targetType: 'organization',
        targetId: orgId,
        details: { from: before.plan, to: checked },
        at: audit.clock.now(),
      });
    }
  });
  return getOrganization(db, orgId);
}

export async function setOrganizationCountry(
  db: Kysely<DB>,
  orgId: string,
  country: string | undefined,
): Promise<Organization> {
  const checked = checkCountry(country?.toUpperCase());
  const updated = await setDefaultCountry(db, orgId, checked);
  if (updated === 0) throw new AppError('NOT_FOUND', `unknown organization "${orgId}"`);
  return getOrganization(db, orgId);
}

/** Every organization of the region, oldest first (so a lost organization ID can be found again). */
export async function listOrganizations(db: Kysely<DB>): Promise<Organization[]> {
  const rows = await listOrganizationRows(db);
  return rows.map(toOrganization);
}
