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
  /*
   * Who handles it (migration 0036-people-in-the-loop). Optional so that inserts need not name
   * them: the database's default is the bot, with no assignee and no handoff.
   */
  /** `bot` (the agent's hook) or `human` (the people of the inbox). */
  handler?: ConversationHandler;
  /** The person of the organization it is assigned to, and their name when assigned. */
  assignee_id?: string | null;
  assignee_name?: string | null;
  /** The last handoff to people (cleared when handed back to the bot). */
  handoff_reason?: string | null;
  handoff_note?: string | null;
  handoff_by?: HandoffBy | null;
  handoff_at?: number | null;
  /** Since when the end user waits for a person's answer (null: nobody waits). */
  waiting_since?: number | null;
  /** When a person first answered after the last handoff. */
  human_replied_at?: number | null;
}

export type ConversationHandler = 'bot' | 'human';
export type HandoffBy = 'agent' | 'user' | 'parley';

/** A message not sent by the bot: by a person of the dashboard, or by Parley (a holding text). */
export interface MessageAuthorTable {
  message_id: string;
  org_id: string;
  kind: 'user' | 'parley';
  user_id: string | null;
  name: string | null;
  created_at: number;
}

/** An internal note of the team on a conversation: shown in the inbox, never sent. */
export interface ConversationNoteTable {
  id: string;
  org_id: string;
  conversation_id: string;
  user_id: string;
  author_name: string;
  text: string;
  created_at: number;
}
