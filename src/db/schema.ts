import type { Generated } from 'kysely';
import type { StatCountTable } from '../analytics/analytics.tables.js';
import type { AuditLogTable } from '../audit/audit.tables.js';
import type { CampaignDedupeKeyTable, CampaignDeliveryTable, SegmentSendTable } from '../campaigns/campaign.tables.js';
import type {
  ConversationNoteTable,
  ConversationTable,
  MessageAuthorTable,
  TriggerTable,
} from '../conversations/conversation.tables.js';
import type {
  DashboardSessionTable,
  InvitationTable,
  SignInFailureTable,
  UserTable,
} from '../dashboard/dashboard.tables.js';
import type { EndUserAttributeTable, EndUserTable, EndUserTagTable } from '../end-users/end-user.table.js';
import type { EventDeliveryTable, EventEndpointTable } from '../events/event.tables.js';
import type { IdempotencyKeyTable } from '../idempotency/idempotency.table.js';
import type { JobDeadLetterTable, JobTable } from '../jobs/jobs.tables.js';
import type { MediaTable, ProviderMediaTable } from '../media/media.tables.js';
import type {
  InboundMessageTable,
  MessageContentTable,
  MessageStatusTable,
  MessageTable,
  MessageTableDefaults,
  MessagingNumberTable,
  MessagingWindowTable,
  PendingStatusTable,
  UnroutedWebhookTable,
} from '../messaging/messaging.tables.js';
import type { NumberAccountTable, NumberTemplateTable, OrgConsentRulesTable } from '../policies/policies.tables.js';
import type { SegmentTable } from '../segments/segment.tables.js';
import type { OrgSendingRulesTable } from '../sending-rules/sending-rules.tables.js';

/** Tables as the database stores them: snake_case columns, times in ms since epoch. */
export interface OrganizationTable {
  id: string;
  name: string;
  plan: 'free' | 'paid';
  default_country: string | null;
  created_at: number;
}

export interface AgentTable {
  id: string;
  org_id: string;
  name: string;
  number_id: string | null;
  created_at: number;
  /** Free text Parley sends when it hands a conversation to people (migration 0036); optional on insert. */
  holding_text?: string | null;
}

export interface CampaignTable {
  id: string;
  org_id: string;
  name: string;
  created_at: number;
  /** The agent whose number sends; null only for campaigns made before campaigns could send. */
  agent_id: string | null;
  template_name: string | null;
  template_language: string | null;
  /** JSON `{"body": [...], "header": [...]}` for recipients given no parameters. */
  default_parameters: string | null;
  status: 'active' | 'paused';
  updated_at: number | null;
  /** Why Parley paused it (its number turned RED); null otherwise (migration 0051). */
  paused_reason: string | null;
}

export interface ApiKeyTable {
  id: string;
  org_id: string;
  label: string;
  prefix: string;
  hash: string;
  scope: 'organization' | 'agent' | 'campaign';
  agent_id: string | null;
  campaign_id: string | null;
  /** Comma-separated permission names. */
  permissions: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** One row (id 1): bumped by triggers on every key or plan change (migration 0013). */
export interface KeyEpochTable {
  id: number;
  epoch: number;
}

export interface DB {
  organizations: OrganizationTable;
  agents: AgentTable;
  campaigns: CampaignTable;
  campaign_deliveries: CampaignDeliveryTable;
  campaign_dedupe_keys: CampaignDedupeKeyTable;
  api_keys: ApiKeyTable;
  key_epoch: KeyEpochTable;
  messaging_numbers: MessagingNumberTable;
  messages: MessageTable & MessageTableDefaults;
  message_statuses: MessageStatusTable;
  pending_statuses: PendingStatusTable;
  inbound_messages: InboundMessageTable;
  messaging_windows: MessagingWindowTable;
  end_users: EndUserTable;
  end_user_tags: EndUserTagTable;
  end_user_attributes: EndUserAttributeTable;
  segments: SegmentTable;
  segment_sends: SegmentSendTable;
  org_sending_rules: OrgSendingRulesTable;
  stat_counts: StatCountTable;
  idempotency_keys: IdempotencyKeyTable;
  webhook_unrouted: UnroutedWebhookTable;
  jobs: JobTable;
  job_dead_letters: JobDeadLetterTable;
  triggers: TriggerTable;
  conversations: ConversationTable;
  event_endpoints: EventEndpointTable;
  event_deliveries: EventDeliveryTable;
  users: UserTable;
  dashboard_sessions: DashboardSessionTable;
  invitations: InvitationTable;
  sign_in_failures: SignInFailureTable;
  audit_log: AuditLogTable;
  message_authors: MessageAuthorTable;
  conversation_notes: ConversationNoteTable;
  media: MediaTable;
  message_contents: MessageContentTable;
  provider_media: ProviderMediaTable;
  number_templates: NumberTemplateTable;
  number_accounts: NumberAccountTable;
  org_consent_rules: OrgConsentRulesTable;
}

// Re-exported so feature tables can use it without importing kysely directly.
export type { Generated };
