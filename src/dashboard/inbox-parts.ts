import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import type { AppContext } from '../context.js';
import { type Conversation, getConversation } from '../conversations/index.js';
import type { DB } from '../db/schema.js';
import type { EndUser } from '../end-users/end-user.model.js';
import {
  countWaiting,
  inboxConversation,
  type PickerTemplate,
  templatesFor,
  windowOpenFor,
} from '../inbox/inbox.service.js';
import { findEndUser, type Person } from '../inbox/person-send.service.js';
import { BUILT_IN_TEMPLATES } from '../sandbox/index.js';
import { randomBase62 } from '../shared/ids.js';
import { handlingText, personName, recordOf, templateOptions, threadItems } from './inbox-view.js';
import { formatTime } from './page-kit.js';
import type { Session } from './session.service.js';
import { canManage, listUsers } from './user.service.js';

/** The pieces of an inbox conversation's page, each also served alone when open pages refresh it. */

export const personOf = (session: Session): Person => ({
  id: session.user.id,
  orgId: session.org.id,
  name: session.user.email,
});

export const inboxPath = (id: string) => `/dashboard/inbox/${encodeURIComponent(id)}`;

/** What the composer offers: nothing (closed, or the bot's), free text, or a template (window closed). */
export type ComposerMode = 'closed' | 'bot' | 'reply' | 'template';

export interface Loaded {
  readonly conversation: Conversation;
  readonly endUser: EndUser | undefined;
  readonly agentName: string;
}

/** The conversation, its end user and agent, and (unless `withThread` is false) its thread. */
export async function load(
  db: Kysely<DB>,
  session: Session,
  id: string,
  withThread = true,
): Promise<Loaded & { thread: ThreadData }> {
  const { conversation, messages, notes } = withThread
    ? await inboxConversation(db, session.org.id, id)
    : {
        conversation: await getConversation(db, () => ({ orgId: session.org.id, agentId: null }), id),
        messages: [],
        notes: [],
      };
  const [endUser, agent] = await Promise.all([
    findEndUser({ db }, session.org.id, conversation.endUserId),
    findAgent(db, session.org.id, conversation.agentId),
  ]);
  const agentName = agent?.name ?? conversation.agentId;
  const who = endUser ? personName(endUser) : conversation.endUserId;
  return {
    conversation,
    endUser,
    agentName,
    thread: { items: threadItems(messages, notes, { endUser: who, agent: agentName }) },
  };
}

export interface ThreadData {
  readonly items: ReturnType<typeof threadItems>;
}

export async function modeOf(ctx: AppContext, session: Session, loaded: Loaded): Promise<ComposerMode> {
  const c = loaded.conversation;
  if (c.status === 'closed') return 'closed';
  if (c.handler !== 'human') return 'bot';
  const open = await windowOpenFor(ctx.db, ctx.clock, session.org.id, c.agentId, loaded.endUser?.phone ?? null);
  return open ? 'reply' : 'template';
}

export async function panelData(ctx: AppContext, session: Session, loaded: Loaded, oob: boolean) {
  const c = loaded.conversation;
  const { state, detail } = handlingText(c, loaded.agentName);
  const manager = canManage(session.user.role);
  return {
    id: c.id,
    csrfToken: session.csrfToken,
    state,
    stateClass: c.status === 'closed' ? 'muted' : c.handler === 'human' ? 'people' : 'enabled',
    detail,
    handoffNote: c.handoff?.note ?? null,
    assignee: c.assignee ? (c.assignee.id === session.user.id ? `${c.assignee.name} (you)` : c.assignee.name) : null,
    assigneeId: c.assignee?.id ?? null,
    mine: c.assignee?.id === session.user.id,
    handler: c.handler,
    open: c.status === 'open',
    // Owners and admins also assign to others.
    people: manager ? (await listUsers(ctx.db, session.org.id)).map((u) => ({ id: u.id, name: u.email })) : undefined,
    oob,
    waiting: oob ? await countWaiting(ctx.db, session.org.id) : 0,
  };
}

/** The template picker's choice and its parameter fields. */
export function fieldsOf(templates: readonly PickerTemplate[], selected: string | undefined) {
  const chosen = templates.find((t) => `${t.name}|${t.language}` === selected) ?? templates[0];
  return chosen ?? { name: '', language: '', header: 0, body: 0 };
}

export async function composerData(
  ctx: AppContext,
  session: Session,
  loaded: Loaded,
  mode: ComposerMode,
  extra: { error?: string | undefined; text?: string | undefined; selected?: string | undefined } = {},
) {
  const c = loaded.conversation;
  const base = { id: c.id, csrfToken: session.csrfToken, mode, key: randomBase62(22), ...extra };
  if (mode !== 'template') return base;
  const templates = await templatesFor(ctx.db, session.org.id, c.agentId, [
    ...BUILT_IN_TEMPLATES,
    ...ctx.config.messaging.sandboxTemplates,
  ]);
  const fields = fieldsOf(templates, extra.selected);
  const who = loaded.endUser ? personName(loaded.endUser) : 'The customer';
  return {
    ...base,
    why: `${who} has not written to this agent's number in the last 24 hours.`,
    templates: templateOptions(templates),
    selected: `${fields.name}|${fields.language}`,
    fields,
  };
}

export const noteFormData = (session: Session, id: string, error?: string) => ({
  id,
  csrfToken: session.csrfToken,
  error,
});

/** Everything the conversation's page shows. */
export async function conversationPageData(ctx: AppContext, session: Session, id: string) {
  const loaded = await load(ctx.db, session, id);
  const mode = await modeOf(ctx, session, loaded);
  const c = loaded.conversation;
  const who = loaded.endUser ? personName(loaded.endUser) : c.endUserId;
  return {
    loaded,
    data: {
      id: c.id,
      who,
      agentName: loaded.agentName,
      started: formatTime(c.startedAt),
      panel: await panelData(ctx, session, loaded, false),
      thread: loaded.thread,
      composer: await composerData(ctx, session, loaded, mode),
      noteForm: noteFormData(session, c.id),
      record: recordOf(loaded.endUser),
    },
  };
}
