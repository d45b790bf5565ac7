import type { Conversation, ThreadMessageOf } from '../conversations/index.js';
import type { EndUser } from '../end-users/end-user.model.js';
import type { InboxItem, Note, PickerTemplate } from '../inbox/inbox.service.js';
import { formatTime } from './page-kit.js';
import { threadItemOf } from './thread-items.js';

/**
 * What the inbox's templates show, in words: a list row, the thread (messages and notes, who sent
 * each, delivery ticks), who handles the conversation, the end user's record. One place, so that
 * a new kind of message is taught to the inbox here and in templates/inbox-thread.eta.
 */

/** A message's first words on one line, for the list. */
const PREVIEW = 90;
export function preview(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return [...line].length <= PREVIEW ? line : `${[...line].slice(0, PREVIEW - 1).join('')}…`;
}

export const personName = (endUser: { name: string | null; phone: string | null; id?: string }) =>
  endUser.name ?? endUser.phone ?? endUser.id ?? 'Unknown';

export function listRow(item: InboxItem, agentNames: ReadonlyMap<string, string>, me: string) {
  return {
    id: item.id,
    who: personName(item.endUser),
    phone: item.endUser.name !== null ? item.endUser.phone : null,
    agent: agentNames.get(item.agentId) ?? item.agentId,
    handler: item.handler === 'human' ? 'People' : 'Bot',
    assignee: item.assignee ? (item.assignee.id === me ? `${item.assignee.name} (you)` : item.assignee.name) : null,
    waiting: item.waitingSince !== null,
    last: item.lastMessage
      ? {
          who: item.lastMessage.direction === 'inbound' ? 'Customer' : 'Answer',
          text: preview(item.lastMessage.text) || '—',
          at: formatTime(item.lastMessage.at),
        }
      : null,
    at: formatTime(item.lastMessageAt),
  };
}

/** Delivery of an outbound message as ticks, with the words a screen reader says. */
export function ticksOf(status: string | undefined): { symbol: string; label: string; tone: string } {
  switch (status) {
    case 'read':
      return { symbol: '✓✓', label: 'Read', tone: 'read' };
    case 'delivered':
      return { symbol: '✓✓', label: 'Delivered', tone: 'delivered' };
    case 'sent':
      return { symbol: '✓', label: 'Sent', tone: 'sent' };
    case 'accepted':
      return { symbol: '✓', label: 'Accepted by the provider', tone: 'sent' };
    case 'failed':
    case 'rejected':
    case 'unconfirmed':
      return { symbol: '✗', label: 'Not delivered', tone: 'failed' };
    default:
      return { symbol: '…', label: 'Sending', tone: 'pending' };
  }
}

export interface ThreadItem {
  readonly kind: 'inbound' | 'outbound' | 'note';
  readonly id: string;
  readonly who: string;
  readonly at: string;
  readonly sortAt: number;
  readonly text: string;
  /** A template: its name and parameters, shown under the text. */
  readonly template?: string | undefined;
  readonly ticks?: { symbol: string; label: string; tone: string } | undefined;
  /** What an inbound message was when it is not text and Parley cannot show it. */
  readonly kindLabel?: string | undefined;
  /** What an inbound message's kind carries, as the conversation view shows it (thread-items.ts). */
  readonly image?: { readonly src: string; readonly alt: string } | undefined;
  readonly file?: { readonly href: string; readonly label: string; readonly size: string } | undefined;
  readonly missing?: string | undefined;
  readonly location?: { readonly href: string; readonly label: string } | undefined;
  readonly note?: string | undefined;
  readonly replyTo?: boolean | undefined;
}

/** A message's text, or what it was: a template with its parameters, a kind without text. */
function outboundText(m: ThreadMessageOf): { text: string; template?: string } {
  if (m.type === 'template' && m.template) {
    const params = m.template.parameters ? [...m.template.parameters.header, ...m.template.parameters.body] : [];
    return { text: '', template: `Template ${m.template.name}${params.length ? `: ${params.join(', ')}` : ''}` };
  }
  return { text: m.text ?? '' };
}

/** The thread as the inbox shows it: messages both ways and the team's notes, oldest first. */
export function threadItems(
  messages: readonly ThreadMessageOf[],
  notes: readonly Note[],
  names: { readonly endUser: string; readonly agent: string },
): ThreadItem[] {
  const items: ThreadItem[] = messages.map((m) => {
    if (m.direction === 'inbound') {
      // Every kind of inbound message as the conversation view shows it: photos inline, files to
      // download, locations, replies, reactions.
      const rich = threadItemOf(m);
      const shown = rich.image || rich.file || rich.missing || rich.location || rich.note;
      const kind = m.inboundType && m.inboundType !== 'text' && !shown ? m.inboundType : undefined;
      return {
        kind: 'inbound',
        id: m.id,
        who: names.endUser,
        at: formatTime(m.createdAt),
        sortAt: m.createdAt,
        text: m.text ?? '',
        kindLabel: kind,
        image: rich.image,
        file: rich.file,
        missing: rich.missing,
        location: rich.location,
        note: rich.note,
        replyTo: rich.replyTo,
      };
    }
    const by = m.sentBy;
    const who =
      by?.type === 'user' ? (by.name ?? 'A person') : by?.type === 'parley' ? 'Parley' : `${names.agent} (bot)`;
    return {
      kind: 'outbound',
      id: m.id,
      who,
      at: formatTime(m.createdAt),
      sortAt: m.createdAt,
      ...outboundText(m),
      ticks: ticksOf(m.status),
    };
  });
  for (const n of notes) {
    items.push({ kind: 'note', id: n.id, who: n.author.name, at: formatTime(n.at), sortAt: n.at, text: n.text });
  }
  return items.sort((a, b) => a.sortAt - b.sortAt);
}

/** Who handles the conversation, in a sentence. */
export function handlingText(c: Conversation, agentName: string): { state: string; detail: string | null } {
  if (c.status === 'closed') return { state: 'Closed', detail: c.closedAt ? `on ${formatTime(c.closedAt)}` : null };
  if (c.handler === 'bot') return { state: 'With the bot', detail: `${agentName} answers the customer.` };
  const h = c.handoff;
  const by = h?.by === 'agent' ? 'the bot' : h?.by === 'user' ? 'a person' : 'Parley';
  const reason =
    h?.reason === 'no_bot'
      ? 'the agent has no hook to answer'
      : h?.reason === 'bot_unreachable'
        ? "the agent's hook did not answer in time"
        : h?.reason === 'taken_over'
          ? 'taken over'
          : h?.reason;
  return {
    state: 'With people',
    detail: h ? `Handed over by ${by}${reason ? ` (${reason})` : ''} on ${formatTime(h.at)}.` : null,
  };
}

/** The end user's record beside the thread. */
export function recordOf(endUser: EndUser | undefined) {
  if (!endUser) return null;
  const consent = Object.entries(endUser.consent ?? {}).map(([channel, value]) => ({
    channel,
    text:
      value && typeof value === 'object' && 'status' in value
        ? String((value as { status: unknown }).status)
        : JSON.stringify(value),
  }));
  return {
    name: endUser.name,
    phone: endUser.phone,
    email: endUser.email,
    tags: endUser.tags,
    consent,
    id: endUser._id,
  };
}

/** The picker's options: `name|language`, with a label a person reads. */
export const templateOptions = (templates: readonly PickerTemplate[]) =>
  templates.map((t) => ({ value: `${t.name}|${t.language}`, label: `${t.name} (${t.language})`, ...t }));
