import type { Migration, MigrationProvider } from 'kysely';
import { platform } from './0001-platform.js';
import { endUsers } from './0002-end-users.js';
import { messaging } from './0003-messaging.js';
import { idempotency } from './0004-idempotency.js';
import { webhookInbox } from './0005-webhook-inbox.js';
import { webhookDeadLetters } from './0006-webhook-dead-letters.js';
import { endUserSearch } from './0007-end-user-search.js';
import { jobs } from './0008-jobs.js';
import { conversations } from './0009-conversations.js';
import { conversationMessages } from './0010-conversation-messages.js';
import { dashboard } from './0011-dashboard.js';
import { campaigns } from './0012-campaigns.js';
import { keyEpoch } from './0013-key-epoch.js';
import { senderEpoch } from './0014-sender-epoch.js';
import { statusHistory } from './0015-status-history.js';
import { oneDeadLetterStore } from './0016-one-dead-letter-store.js';
import { type MigrationDeps, sealedEndpointSecrets } from './0017-sealed-endpoint-secrets.js';

import { invitations } from './0018-invitations.js';
import { listIndexes } from './0019-list-indexes.js';
import { idempotencyClaimToken } from './0020-idempotency-claim-token.js';
import { media } from './0022-media.js';
import { peopleInTheLoop } from './0036-people-in-the-loop.js';
import { richOutbound } from './0040-rich-outbound.js';
import { templateCatalogue } from './0050-template-catalogue.js';
import { campaignPausedReason } from './0051-campaign-paused-reason.js';
import { endUserAttributes } from './0060-end-user-attributes.js';
import { segments } from './0061-segments.js';
import { segmentSends } from './0062-segment-sends.js';
import { orgSendingRules } from './0063-org-sending-rules.js';
import { statCounts } from './0064-stat-counts.js';

export type { MigrationDeps, Sealer } from './0017-sealed-endpoint-secrets.js';

/**
 * Every migration, in order (some take what they need beyond the database: `deps`). Names sort lexically; add new ones at the end with the next number.
 * A static list (not a folder scan) so the same code runs from src/ under tsx and from dist/.
 */
export function migrationsWith(deps: MigrationDeps): Record<string, Migration> {
  return {
    '0001-platform': platform,
    '0002-end-users': endUsers,
    '0003-messaging': messaging,
    '0004-idempotency': idempotency,
    '0005-webhook-inbox': webhookInbox,
    '0006-webhook-dead-letters': webhookDeadLetters,
    '0007-end-user-search': endUserSearch,
    '0008-jobs': jobs,
    '0009-conversations': conversations,
    '0010-conversation-messages': conversationMessages,
    '0011-dashboard': dashboard,
    '0012-campaigns': campaigns,
    '0013-key-epoch': keyEpoch,
    '0014-sender-epoch': senderEpoch,
    '0015-status-history': statusHistory,
    '0016-one-dead-letter-store': oneDeadLetterStore,
    '0017-sealed-endpoint-secrets': sealedEndpointSecrets(deps),
    '0018-invitations': invitations,
    '0019-list-indexes': listIndexes,
    '0020-idempotency-claim-token': idempotencyClaimToken,
    '0022-media': media,
    '0036-people-in-the-loop': peopleInTheLoop,
    '0040-rich-outbound': richOutbound,
    '0050-template-catalogue': templateCatalogue,
    '0051-campaign-paused-reason': campaignPausedReason,
    '0060-end-user-attributes': endUserAttributes,
    '0061-segments': segments,
    '0062-segment-sends': segmentSends,
    '0063-org-sending-rules': orgSendingRules,
    '0064-stat-counts': statCounts,
  };
}

/** The list without the secret box (a database with secrets to seal then fails to migrate, saying why). */
export const migrations: Record<string, Migration> = migrationsWith({});

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};

/** The provider the server and the CLI migrate with: the secret box is at hand. */
export function migrationProviderWith(deps: MigrationDeps): MigrationProvider {
  return { getMigrations: async () => migrationsWith(deps) };
}
