/** An entry point of one agent: its ID is unique within the agent. */
export interface TriggerTable {
  agent_id: string;
  id: string;
  org_id: string;
  name: string;
  template_name: string;
  template_language: string;
  /** 1 or 0. */
  enabled: number;
  created_at: number;
}

export type ConversationStatus = 'open' | 'closed';

/** The thread between one agent and one end user; at most one open per pair. */
export interface ConversationTable {
  id: string;
  org_id: string;
  agent_id: string;
  end_user_id: string;
  trigger_id: string | null;
  campaign_id: string | null;
  status: ConversationStatus;
  /** JSON text of the object the trigger was given. */
  context: string | null;
  started_at: number;
  last_message_at: number;
  closed_at: number | null;
  updated_at: number;
}
