import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { storedHealth } from './number-health.service.js';
import { findAccount, listTemplateRows, templateOfRow } from './template.repository.js';

/** What the dashboard's agent page shows of its number: its templates, when they were read, its health. */
export interface NumberPolicyView {
  readonly templates: {
    readonly name: string;
    readonly language: string;
    readonly category: string;
    readonly status: string;
    readonly header: string;
    readonly bodyParameters: number;
    readonly buttons: string;
  }[];
  readonly syncedAt: number | null;
  readonly syncError: string | null;
  readonly quality: string | null;
  readonly messagingLimit: string | null;
}

export async function numberPolicyView(
  db: Kysely<DB>,
  orgId: string,
  numberId: string | null,
): Promise<NumberPolicyView | null> {
  if (!numberId) return null;
  const [rows, account, health] = await Promise.all([
    listTemplateRows(db, orgId, numberId),
    findAccount(db, numberId),
    storedHealth(db, [numberId]),
  ]);
  const h = health.get(numberId);
  return {
    templates: rows.map(templateOfRow).map((t) => ({
      name: t.name,
      language: t.language,
      category: t.category,
      status: t.status,
      header: t.header ? `${t.header.format} (${t.header.parameters})` : 'none',
      bodyParameters: t.bodyParameters,
      buttons: t.buttons.map((b) => b.text || b.type).join(', ') || 'none',
    })),
    syncedAt: account?.templates_synced_at == null ? null : Number(account.templates_synced_at),
    syncError: account?.sync_error ?? null,
    quality: h?.quality ?? null,
    messagingLimit: h?.messagingLimit ?? null,
  };
}
