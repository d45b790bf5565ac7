import { secretBoxOf } from '../../numbers/index.js';
import { createProviderAccount } from '../../policies/provider-account.js';
import { type SyncResult, syncTemplates } from '../../policies/template-sync.service.js';
import { readSandboxAddress } from '../../sandbox/index.js';
import { createLogger } from '../../shared/logger.js';
import type { AdminContext } from '../admin.js';

/**
 * Reads templates from the provider in the CLI's own process: the configured provider, else the
 * sandbox `parley serve` runs for the region (or `sandboxUrl`). Undefined when neither is there.
 */
export async function syncFromCli(
  admin: AdminContext,
  filter: { orgId?: string; numberId?: string },
  sandboxUrl?: string,
): Promise<SyncResult[] | undefined> {
  const m = admin.config.messaging;
  const base = m.providerBaseUrl ?? sandboxUrl ?? readSandboxAddress(admin.config.dataDir, admin.region.region);
  if (!base) return undefined;
  return syncTemplates(
    {
      db: admin.database.db,
      clock: admin.clock,
      logger: createLogger(admin.config, { component: 'template-sync' }),
      secrets: secretBoxOf(admin.config),
      account: createProviderAccount({
        baseUrl: () => base,
        version: m.providerApiVersion,
        timeoutMs: m.providerTimeoutMs,
      }),
    },
    filter,
  );
}

/** The sentence of one number's sync, for the CLI. */
export const syncSentence = (r: SyncResult, phone: string) =>
  r.synced
    ? `${phone}: ${r.templates} templates${r.changed > 0 ? ` (${r.changed} changed)` : ', none changed'}`
    : `${phone}: not synced: ${r.error ?? 'unknown error'}`;
