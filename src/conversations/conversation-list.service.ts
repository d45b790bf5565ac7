import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type PageRequest, pageOf, seekOf, type TwoWayPage } from '../shared/page.js';
import type { ConversationStatus } from './conversation.tables.js';
import { type ConversationSummaryRow, listConversationSummaryRows } from './conversation-list.repository.js';
import { type LastMessage, lastMessageOf } from './last-message.js';

/** The organization's conversations as the dashboard lists them: newest first, a page at a time both ways. */

/** Who opened the conversation: a trigger, a campaign, the end user writing first, or the agent's own send. */
export type StartedBy =
  | { readonly kind: 'trigger'; readonly name: string }
  | { readonly kind: 'campaign'; readonly name: string; readonly campaignId: string }
  | { readonly kind: 'customer' }
  | { readonly kind: 'agent' };

export interface ConversationSummary {
  readonly id: string;
  readonly agentId: string;
  readonly endUser: { readonly id: string; readonly name: string | null; readonly phone: string | null };
  readonly startedBy: StartedBy;
  readonly status: ConversationStatus;
  readonly startedAt: number;
  /** The newest message either way: its text (or what it was, for a template or a picture) and time. */
  readonly lastMessage: LastMessage | null;
}

/** Conversation IDs as the API's cursors accept them. */
const CURSOR_ID = /^\P{Cc}{1,512}$/u;

export async function pageOfConversationSummaries(
  db: Kysely<DB>,
  orgId: string,
  filter: { agentId?: string | undefined; status?: ConversationStatus | undefined },
  request: PageRequest,
): Promise<TwoWayPage<ConversationSummary>> {
  const seek = seekOf(request, CURSOR_ID);
  const rows = await listConversationSummaryRows(db, orgId, filter, seek, request.limit + 1);
  return pageOf(rows, request.limit, seek, (r) => ({ at: Number(r.started_at), id: r.id }), toSummary);
}

function startedBy(row: ConversationSummaryRow): StartedBy {
  if (row.campaign_id !== null)
    return { kind: 'campaign', name: row.campaign_name ?? row.campaign_id, campaignId: row.campaign_id };
  if (row.trigger_id !== null) return { kind: 'trigger', name: row.trigger_name ?? row.trigger_id };
  return row.customer_started === true || Number(row.customer_started) === 1 ? { kind: 'customer' } : { kind: 'agent' };
}

const toSummary = (row: ConversationSummaryRow): ConversationSummary => ({
  id: row.id,
  agentId: row.agent_id,
  endUser: { id: row.end_user_id, name: row.end_user_name, phone: row.end_user_phone },
  startedBy: startedBy(row),
  status: row.status,
  startedAt: Number(row.started_at),
  lastMessage: lastMessageOf(row),
});
