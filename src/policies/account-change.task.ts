import type { JobRunner } from '../jobs/job-runner.js';
import { ACCOUNT_CHANGE_QUEUE, TEMPLATE_SYNC_QUEUE } from '../jobs/queues.js';
import { isAppError } from '../shared/errors.js';
import { toE164 } from '../shared/phone.js';
import { type OnQualityChange, refreshNumberHealth } from './number-health.service.js';
import { numberForHealth, numbersOfAccount, numbersToSync, setTemplateStatus } from './template.repository.js';
import { syncNumberTemplates, syncTemplates, type TemplateSyncDeps } from './template-sync.service.js';

/** A provider webhook about an account or a number (messaging's `AccountChangeJob`). */
export interface AccountChange {
  readonly field: string;
  readonly accountId: string | null;
  readonly value: Record<string, unknown>;
  readonly receivedAt: number;
}

export type AccountTaskDeps = TemplateSyncDeps & { readonly onQualityChange?: OnQualityChange | undefined };

const text = (v: unknown, max = 512): string | undefined =>
  typeof v === 'string' && v.length > 0 && v.length <= max ? v : typeof v === 'number' ? String(v) : undefined;

/**
 * Applies one change: a template's new status on every number of its account (a template the
 * catalogues do not hold yet makes them sync whole), or a number's quality, read again from the
 * provider since the webhook does not carry the colour.
 */
export async function applyAccountChange(deps: AccountTaskDeps, change: AccountChange): Promise<void> {
  if (change.field === 'message_template_status_update') {
    const name = text(change.value.message_template_name);
    const language = text(change.value.message_template_language, 16);
    const status = text(change.value.event, 32)?.toUpperCase();
    if (!change.accountId || !name || !language || !status) return;
    const numbers = await numbersOfAccount(deps.db, change.accountId);
    const updated = await setTemplateStatus(
      deps.db,
      numbers.map((n) => n.number_id),
      {
        name,
        language,
        status,
        category: text(change.value.message_template_category, 32)?.toUpperCase(),
        at: deps.clock.now(),
      },
    );
    if (updated < numbers.length) {
      for (const n of await numbersToSync(deps.db, {})) {
        if (numbers.some((x) => x.number_id === n.id)) await syncNumberTemplates(deps, n);
      }
    }
    return;
  }
  if (change.field === 'phone_number_quality_update') {
    const phoneNumberId = text(change.value.phone_number_id, 64);
    const display = text(change.value.display_phone_number, 32);
    const n = await numberForHealth(deps.db, {
      phoneNumberId,
      phone: display ? (toE164(`+${display.replace(/\D/g, '')}`) ?? undefined) : undefined,
    });
    if (!n) {
      deps.logger.warn({ phoneNumberId, display }, 'quality update for a number Parley does not have');
      return;
    }
    await refreshNumberHealth(deps, n, n.quality);
  }
}

/** Every number's templates and health, read again (the scheduled job). */
export async function refreshAll(deps: AccountTaskDeps): Promise<void> {
  await syncTemplates(deps);
  for (const n of await numbersToSync(deps.db, {})) {
    const before = (await numberForHealth(deps.db, { phoneNumberId: n.phoneNumberId }))?.quality ?? null;
    try {
      await refreshNumberHealth(deps, n, before);
    } catch (err) {
      if (!isAppError(err)) throw err;
      deps.logger.warn(
        { numberId: n.id, err: err.message },
        'could not read a number’s quality; the next sync tries again',
      );
    }
  }
}

/** Declares the account-change queue and the scheduled sync (once every `everyMs` across the region's nodes). */
export function defineAccountTasks(jobs: JobRunner, deps: AccountTaskDeps, everyMs: number): void {
  jobs.define<AccountChange>({
    name: ACCOUNT_CHANGE_QUEUE,
    concurrency: 2,
    retryDelaysMs: [1_000, 10_000, 60_000],
    handler: (payload) => applyAccountChange(deps, payload),
  });
  jobs.schedule({ name: TEMPLATE_SYNC_QUEUE, everyMs, run: () => refreshAll(deps) });
}
