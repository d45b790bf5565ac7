import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { HOLDING_TEXT_QUEUE } from '../jobs/queues.js';
import { publishLive } from '../live/index.js';
import { AppError } from '../shared/errors.js';
import {
  type Conversation,
  type ConversationDeps,
  getConversationRow,
  type Reader,
  toConversation,
} from './conversation.service.js';
import type { ConversationTable } from './conversation.tables.js';
import { setAssignee, setHandedOff, setReleased } from './handling.repository.js';
import { type Actor, emitAssigned, emitHandoff, emitReleased } from './handoff.events.js';

export type { Actor } from './handoff.events.js';

/** What a holding-text job carries: the handoff it belongs to, so that it is sent once per handoff. */
export interface HoldingTextJob {
  readonly orgId: string;
  readonly conversationId: string;
  readonly handoffAt: number;
}

export interface HandoffInput {
  readonly reason?: string | null | undefined;
  readonly note?: string | null | undefined;
  readonly by: Actor;
  /** A person who takes it over is assigned it at once. */
  readonly assignTo?: { readonly id: string; readonly name: string } | undefined;
  /** What derives the event's ID when the handoff may run again (a fallback's job). */
  readonly eventKey?: string | undefined;
}

const closed = (id: string) =>
  new AppError(
    'INVALID_BODY',
    `Conversation '${id}' is closed; the next message between the agent and the end user opens a new one.`,
  );

/** Runs `work` in `deps.db`'s transaction, or in a new one. */
function inTransaction<T>(deps: ConversationDeps, work: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  return deps.db.isTransaction ? work(deps.db) : deps.db.transaction().execute(work);
}

/**
 * Hands a conversation the bot holds to people: `conversation.handoff` raised and open inbox pages
 * told, in one transaction; Parley's own handoffs (a fallback) also queue the agent's holding text.
 * A closed conversation is a 400; one people hold already is answered as it is.
 */
export async function handOff(
  deps: ConversationDeps,
  reader: Reader,
  id: string,
  input: HandoffInput,
): Promise<Conversation> {
  const existing = await getConversationRow(deps.db, reader, id);
  if (existing.status === 'closed') throw closed(existing.id);
  if (existing.handler === 'human') return toConversation(existing);
  const row = await handOffRow(deps, existing, input);
  return toConversation(row ?? (await getConversationRow(deps.db, reader, id)));
}

/** `handOff` of a conversation row already read (the caller checked it is open); undefined when people hold it. */
export async function handOffRow(
  deps: ConversationDeps,
  existing: ConversationTable,
  input: HandoffInput,
): Promise<ConversationTable | undefined> {
  const at = deps.clock.now();
  return inTransaction(deps, async (trx) => {
    const row = await setHandedOff(trx, existing.org_id, existing.id, {
      reason: input.reason?.trim() || null,
      note: input.note?.trim() || null,
      by: input.by.type,
      at,
      assignee: input.assignTo,
    });
    if (!row) return undefined;
    const events = { db: trx, jobs: deps.jobs, clock: deps.clock };
    await emitHandoff(events, row, input.by, input.eventKey);
    if (input.assignTo) await emitAssigned(events, row, input.by);
    if (input.by.type === 'parley') {
      await deps.jobs.enqueue<HoldingTextJob>(
        HOLDING_TEXT_QUEUE,
        { orgId: row.org_id, conversationId: row.id, handoffAt: at },
        { db: trx },
      );
    }
    await publishLive(trx, { orgId: row.org_id, conversationIds: [row.id], kind: 'handling' });
    return row;
  });
}

/** Back to the bot: `conversation.released`. One the bot holds already is answered as it is; a closed one is a 400. */
export async function release(deps: ConversationDeps, reader: Reader, id: string, by: Actor): Promise<Conversation> {
  const existing = await getConversationRow(deps.db, reader, id);
  if (existing.status === 'closed') throw closed(existing.id);
  if (existing.handler !== 'human') return toConversation(existing);
  const at = deps.clock.now();
  const row = await inTransaction(deps, async (trx) => {
    const released = await setReleased(trx, existing.org_id, existing.id, at);
    if (!released) return undefined;
    await emitReleased({ db: trx, jobs: deps.jobs, clock: deps.clock }, released, by);
    await publishLive(trx, { orgId: released.org_id, conversationIds: [released.id], kind: 'handling' });
    return released;
  });
  return toConversation(row ?? (await getConversationRow(deps.db, reader, id)));
}

/**
 * Assigns a conversation people hold to a person of the organization (the caller checked who may
 * assign whom), or to nobody: `conversation.assigned`. The bot's conversations are taken over
 * first (a 400 says so); assigning it to whom it is assigned already changes nothing.
 */
export async function assign(
  deps: ConversationDeps,
  reader: Reader,
  id: string,
  assignee: { readonly id: string; readonly name: string } | null,
  by: Actor,
): Promise<Conversation> {
  const existing = await getConversationRow(deps.db, reader, id);
  if (existing.status === 'closed') throw closed(existing.id);
  if (existing.handler !== 'human') {
    throw new AppError('INVALID_BODY', 'The bot handles this conversation: take it over before assigning it.');
  }
  if ((existing.assignee_id ?? null) === (assignee?.id ?? null)) return toConversation(existing);
  const at = deps.clock.now();
  const row = await inTransaction(deps, async (trx) => {
    const assigned = await setAssignee(trx, existing.org_id, existing.id, assignee, at);
    if (!assigned) return undefined;
    await emitAssigned({ db: trx, jobs: deps.jobs, clock: deps.clock }, assigned, by);
    await publishLive(trx, { orgId: assigned.org_id, conversationIds: [assigned.id], kind: 'handling' });
    return assigned;
  });
  return toConversation(row ?? (await getConversationRow(deps.db, reader, id)));
}

/**
 * A person takes a conversation: one the bot holds is handed to people (reason `taken_over`) and
 * assigned to them; one people hold is assigned to them.
 */
export async function takeOver(
  deps: ConversationDeps,
  reader: Reader,
  id: string,
  person: { readonly id: string; readonly name: string },
): Promise<Conversation> {
  const by: Actor = { type: 'user', id: person.id, name: person.name };
  const existing = await getConversationRow(deps.db, reader, id);
  if (existing.status === 'closed') throw closed(existing.id);
  if (existing.handler === 'human') return assign(deps, reader, id, person, by);
  const row = await handOffRow(deps, existing, { reason: 'taken_over', by, assignTo: person });
  return row ? toConversation(row) : assign(deps, reader, id, person, by);
}
