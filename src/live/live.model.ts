import { createHash } from 'node:crypto';

/**
 * What open inbox pages are told: something changed in these conversations of an organization.
 * Pages then read what they show again (with the reader's own permissions), so a change carries no
 * content, only where it happened and what kind of thing it was.
 */
export type LiveKind =
  /** A message came in or went out. */
  | 'message'
  /** A delivery status of an outbound message. */
  | 'status'
  /** Handed to people or back to the bot, assigned, closed, opened. */
  | 'handling'
  /** An internal note. */
  | 'note'
  /** The stream may have missed changes (a lost connection to PostgreSQL): read everything again. */
  | 'resync';

export interface LiveChange {
  readonly orgId: string;
  readonly conversationIds: readonly string[];
  readonly kind: LiveKind;
}

/** Conversations named in one notification at most; past that it names none (every page reads again). */
export const MAX_IDS = 40;

/** The payload of a notification (PostgreSQL allows 8,000 bytes; this stays far below). */
export function encodeChange(change: LiveChange): string {
  const ids = change.conversationIds.length > MAX_IDS ? [] : change.conversationIds;
  return JSON.stringify({ o: change.orgId, c: ids, k: change.kind, all: change.conversationIds.length > MAX_IDS });
}

const KINDS: readonly LiveKind[] = ['message', 'status', 'handling', 'note', 'resync'];

/** A payload back into a change; undefined when it is not one of ours. */
export function decodeChange(payload: string): (LiveChange & { readonly all: boolean }) | undefined {
  try {
    const v = JSON.parse(payload) as { o?: unknown; c?: unknown; k?: unknown; all?: unknown };
    if (typeof v.o !== 'string' || !Array.isArray(v.c) || !KINDS.includes(v.k as LiveKind)) return undefined;
    return {
      orgId: v.o,
      conversationIds: v.c.filter((x): x is string => typeof x === 'string'),
      kind: v.k as LiveKind,
      all: v.all === true,
    };
  } catch {
    return undefined;
  }
}

/**
 * The PostgreSQL channel of a schema's changes: one per schema (a region, or a test), so that
 * regions and tests sharing a database do not hear each other. Hashed: a channel name is at most
 * 63 bytes, a schema name may be longer. The publishing statement computes the same name from
 * `current_schema()` (live.repository.ts).
 */
export const channelOf = (schema: string): string =>
  `parley_live_${createHash('md5').update(schema).digest('hex').slice(0, 16)}`;
