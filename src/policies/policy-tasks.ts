import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import type { AccountTaskDeps } from './account-change.task.js';
import type { OnQualityChange } from './number-health.service.js';
import { createProviderAccount } from './provider-account.js';

export { type AccountTaskDeps, defineAccountTasks } from './account-change.task.js';
export { defineConsentKeywordQueue } from './consent-keyword.task.js';

/**
 * What reading the provider's account endpoints needs, built once in context.ts: the provider's
 * base address (the in-process sandbox's when none is configured), the secrets that open tokens.
 */
export function createPolicyDeps(
  config: Config,
  parts: {
    readonly db: Kysely<DB>;
    readonly clock: Clock;
    readonly logger: Logger;
    readonly messaging: {
      readonly sandbox: { readonly url: string } | undefined;
      readonly secrets: { open(sealed: string): string };
    };
    /** What a change of a number's quality rating leads to (campaigns paused on RED). */
    readonly onQualityChange?: OnQualityChange;
  },
): AccountTaskDeps {
  const m = config.messaging;
  return {
    db: parts.db,
    clock: parts.clock,
    logger: parts.logger,
    secrets: parts.messaging.secrets,
    onQualityChange: parts.onQualityChange,
    account: createProviderAccount({
      baseUrl: () => m.providerBaseUrl ?? parts.messaging.sandbox?.url ?? '',
      version: m.providerApiVersion,
      timeoutMs: m.providerTimeoutMs,
    }),
  };
}
