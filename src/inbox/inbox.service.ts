import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import type { ConversationHandler } from '../conversations/conversation.tables.js';
import type { Conversation } from '../conversations/index.js';
import {
  countWaitingRows,
  getConversation,
  handlingOf,
  type LastMessage,
  lastMessageOf,
  listConversationMessages,
  type ThreadMessageOf,
} from '../conversations/index.js';
import type { DB } from '../db/schema.js';
import { publishLive } from '../live/index.js';
import { isWindowOpen } from '../messaging/index.js';
import { listNumbers } from '../numbers/number.service.js';
import { readCatalogue } from '../policies/index.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { windowKey } from '../shared/phone.js';
import { listTriggers } from '../triggers/trigger.service.js';
import { insertNote, listInboxRows, listNoteRows } from './inbox.repository.js';
import type { Person } from './person-send.service.js';

/** The inbox's lists: people's conversations, mine, those assigned to nobody, every open one. */
export const INBOX_VIEWS = ['people', 'mine', 'unassigned', 'open'] as const;
export type InboxView = (typeof INBOX_VIEWS)[number];
export const isInboxView = (v: string): v is InboxView => (INBOX_VIEWS as readonly string[]).includes(v);

/** Rows of a list at most: the newest activity first. */
export const INBOX_LIMIT = 100;

export interface InboxItem {
  readonly id: string;
  readonly agentId: string;
  readonly endUser: { readonly id: string; readonly name: string | null; readonly phone: string | null };
  readonly handler: ConversationHandler;
  readonly assignee: { readonly id: string; readonly name: string } | null;
  /** Since when the end user waits for a person (null: nobody waits). */
  readonly waitingSince: number | null;
  readonly lastMessageAt: number;
  readonly lastMessage: LastMessage | null;
}

/** One of the inbox's lists for this person, newest activity first. */
export async function listInbox(db: Kysely<DB>, person: Person, view: InboxView): Promise<InboxItem[]> {
  const filter =
    view === 'open'
      ? { people: false }
      : view === 'mine'
        ? { people: true, assigneeId: person.id }
        : view === 'unassigned'
          ? { people: true, assigneeId: null }
          : { people: true };
  const rows = await listInboxRows(db, person.orgId, filter, INBOX_LIMIT);
  return rows.map((row) => {
    const handling = handlingOf(row);
    return {
      id: row.id,
      agentId: row.agent_id,
      endUser: { id: row.end_user_id, name: row.end_user_name, phone: row.end_user_phone },
      handler: handling.handler,
      assignee: handling.assignee,
      waitingSince:
        handling.handler === 'human' && row.waiting_since !== null && row.waiting_since !== undefined
          ? Number(row.waiting_since)
          : null,
      lastMessageAt: Number(row.last_message_at),
      lastMessage: lastMessageOf(row),
    };
  });
}

/** How many of the organization's open conversations wait for a person (the navigation's count). */
export function countWaiting(db: Kysely<DB>, orgId: string): Promise<number> {
  return countWaitingRows(db, orgId);
}

/** Messages of a thread the inbox shows at most: the newest. */
export const THREAD_LIMIT = 200;

export interface Note {
  readonly id: string;
  readonly author: { readonly id: string; readonly name: string };
  readonly text: string;
  readonly at: number;
}

/**
 * A conversation as the inbox shows it: the conversation, its newest messages (oldest first, as
 * the API's thread gives them, with who sent each) and the team's notes.
 */
export async function inboxConversation(
  db: Kysely<DB>,
  orgId: string,
  id: string,
): Promise<{ conversation: Conversation; messages: ThreadMessageOf[]; notes: Note[] }> {
  const reader = { orgId, agentId: null };
  const conversation = await getConversation(db, () => reader, id);
  const messages: ThreadMessageOf[] = [];
  let cursor: string | null | undefined;
  // The thread API pages oldest first; a conversation rarely has more than a few pages.
  for (let page = 0; page < 25; page++) {
    const next = await listConversationMessages(db, reader, id, {
      limit: THREAD_LIMIT,
      ...(cursor ? { cursor } : {}),
    });
    messages.push(...next.data);
    if (messages.length > THREAD_LIMIT) messages.splice(0, messages.length - THREAD_LIMIT);
    cursor = next.nextCursor;
    if (!cursor) break;
  }
  const notes = (await listNoteRows(db, orgId, id, THREAD_LIMIT)).map((n) => ({
    id: n.id,
    author: { id: n.user_id, name: n.author_name },
    text: n.text,
    at: Number(n.created_at),
  }));
  return { conversation, messages, notes };
}

export const MAX_NOTE = 2000;

/** An internal note on a conversation: stored, shown to the team on every open page, never sent. */
export async function addNote(
  deps: { readonly db: Kysely<DB>; readonly clock: Clock },
  person: Person,
  conversationId: string,
  text: string,
): Promise<Note> {
  const value = text.trim();
  if (!value) throw new AppError('INVALID_BODY', 'A note needs some text.');
  if ([...value].length > MAX_NOTE) {
    throw new AppError('INVALID_BODY', `A note is at most ${MAX_NOTE} characters; this one has ${[...value].length}.`);
  }
  const conversation = await getConversation(deps.db, () => ({ orgId: person.orgId, agentId: null }), conversationId);
  const at = deps.clock.now();
  const id = newId('nte');
  await deps.db.transaction().execute(async (trx) => {
    await insertNote(trx, {
      id,
      org_id: person.orgId,
      conversation_id: conversation.id,
      user_id: person.id,
      author_name: person.name,
      text: value,
      created_at: at,
    });
    await publishLive(trx, { orgId: person.orgId, conversationIds: [conversation.id], kind: 'note' });
  });
  return { id, author: { id: person.id, name: person.name }, text: value, at };
}

/** A template the picker offers, with its parameter counts when Parley knows them. */
export interface PickerTemplate {
  readonly name: string;
  readonly language: string;
  readonly header: number | null;
  readonly body: number | null;
}

/**
 * The templates a person may pick for a conversation whose window is closed: those the agent's
 * number knows (a sandbox number: the sandbox's own, with their parameter counts) and those the
 * organization's triggers open conversations with; once the number's template catalogue was synced,
 * its approved templates instead.
 */
export async function templatesFor(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  sandboxTemplates: readonly { name: string; language: string; header: number; body: number }[],
): Promise<PickerTemplate[]> {
  const agent = await findAgent(db, orgId, agentId);
  const numbers = agent?.numberId ? await listNumbers(db, orgId) : [];
  const number = numbers.find((n) => n.id === agent?.numberId);
  const out = new Map<string, PickerTemplate>();
  const catalogue = number ? await readCatalogue(db, orgId, number.id) : undefined;
  if (catalogue?.synced) {
    // The number's catalogue is the truth: its approved templates, but those whose header is a file
    // (the picker has no file to give them).
    for (const t of catalogue.templates.values()) {
      if (t.status !== 'APPROVED' || (t.header && t.header.format !== 'TEXT')) continue;
      out.set(`${t.name}|${t.language}`, {
        name: t.name,
        language: t.language,
        header: t.header?.parameters ?? 0,
        body: t.bodyParameters,
      });
    }
    return [...out.values()].sort((a, b) => a.name.localeCompare(b.name) || a.language.localeCompare(b.language));
  }
  if (number?.provider === 'sandbox') {
    for (const t of sandboxTemplates) {
      out.set(`${t.name}|${t.language}`, { name: t.name, language: t.language, header: t.header, body: t.body });
    }
  }
  for (const trigger of await listTriggers(db, orgId)) {
    const key = `${trigger.template}|${trigger.language}`;
    if (!out.has(key)) out.set(key, { name: trigger.template, language: trigger.language, header: null, body: null });
  }
  return [...out.values()].sort((a, b) => a.name.localeCompare(b.name) || a.language.localeCompare(b.language));
}

/** Whether free text may go to the end user now: they wrote to the agent's number in the last 24 hours. */
export async function windowOpenFor(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  agentId: string,
  phone: string | null,
): Promise<boolean> {
  if (!phone) return false;
  const agent = await findAgent(db, orgId, agentId);
  if (!agent?.numberId) return false;
  return isWindowOpen(db, agent.numberId, windowKey(phone), clock.now());
}
