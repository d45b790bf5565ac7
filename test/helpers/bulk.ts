import { sql } from 'kysely';
import type { AppContext } from '../../src/context.js';
import { searchKey } from '../../src/end-users/normalize.js';
import { newId } from '../../src/shared/ids.js';
import type { TestDialect } from './app.js';
import { makeAgent, makeOrg, makeTrigger } from './factories.js';
import { templateMessageRow } from './messaging.js';

/**
 * An organization with 10,000 rows in every list the dashboard pages through, written in one
 * transaction by multi-row inserts (a few hundred milliseconds), not through the API. Row i is
 * made at T0 + i ms, so "newest first" is i = 9,999 down to 0, and what each row looks like
 * follows from i (see the functions below).
 */
export const ROWS = 10_000;
export const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);

export const phoneOf = (i: number) => `+1415${String(5_000_000 + i).padStart(7, '0')}`;
/** Even end users have a name; odd ones only a phone. */
export const nameOf = (i: number) => (i % 2 === 0 ? `Person ${i}` : null);

/** The deliveries: one in five failed (ours), one in five delivered (the provider's word), the rest queued. */
export type SeedStatus = 'queued' | 'failed' | 'delivered';
export const deliveryStatusOf = (i: number): SeedStatus =>
  i % 5 === 0 ? 'failed' : i % 5 === 1 ? 'delivered' : 'queued';

/** Conversations: i % 3 = 0 started by the campaign, 1 by the trigger, 2 by the end user writing first. */
export type SeedStarter = 'campaign' | 'trigger' | 'customer';
export const starterOf = (i: number): SeedStarter =>
  (['campaign', 'trigger', 'customer'] as const)[i % 3] ?? 'customer';
/** The last message of conversation i: the end user's words for a customer conversation, else the agent's. */
export const lastTextOf = (i: number) => (starterOf(i) === 'customer' ? `Where is <order> ${i}?` : `Reply ${i}`);

export interface Seeded {
  orgId: string;
  agentId: string;
  agentName: string;
  campaignId: string;
  campaignName: string;
  triggerName: string;
  /** IDs by i. */
  deliveryIds: string[];
  conversationIds: string[];
  endUserIds: string[];
  auditIds: string[];
  /** Keys: i % 4 = 0 revoked (2,500), the rest active. */
  keyIds: string[];
}

const CHUNK = 500;

async function insertChunked<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await insert(rows.slice(i, i + CHUNK));
}

export async function seedLists(ctx: AppContext, dialect: TestDialect): Promise<Seeded> {
  const org = await makeOrg(ctx);
  const agent = await makeAgent(ctx, org.id);
  const trigger = await makeTrigger(ctx, org.id, agent.id, 'order_update');
  const campaignId = newId('cmp');
  const campaignName = 'Winter <sale>';
  const ids = Array.from({ length: ROWS }, (_, i) => i);
  const seeded: Seeded = {
    orgId: org.id,
    agentId: agent.id,
    agentName: agent.name,
    campaignId,
    campaignName,
    triggerName: trigger.name,
    deliveryIds: ids.map(() => newId('dlv')),
    conversationIds: ids.map(() => newId('cnv')),
    endUserIds: ids.map(() => newId('eu')),
    auditIds: ids.map(() => newId('aud')),
    keyIds: ids.map(() => newId('key')),
  };
  const numberId = 'num_bulk';
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('campaigns')
      .values({
        id: campaignId,
        org_id: org.id,
        name: campaignName,
        created_at: T0,
        agent_id: agent.id,
        template_name: 'hello_world',
        template_language: 'en_US',
        default_parameters: null,
        status: 'active',
        updated_at: T0,
      })
      .execute();
    await insertChunked(ids, (chunk) =>
      trx
        .insertInto('end_users')
        .values(
          chunk.map((i) => {
            const name = nameOf(i);
            return {
              id: seeded.endUserIds[i] ?? '',
              org_id: org.id,
              name,
              name_search: name === null ? null : searchKey(name),
              email: null,
              phone: phoneOf(i),
              tags: '[]',
              origin: 'manual' as const,
              channel_identifiers: '{}',
              consent: '{}',
              created_at: T0 + i,
              last_seen_at: null,
              updated_at: T0 + i,
            };
          }),
        )
        .execute(),
    );
    await insertChunked(ids, (chunk) =>
      trx
        .insertInto('conversations')
        .values(
          chunk.map((i) => ({
            id: seeded.conversationIds[i] ?? '',
            org_id: org.id,
            agent_id: agent.id,
            end_user_id: seeded.endUserIds[i] ?? '',
            trigger_id: starterOf(i) === 'trigger' ? trigger.id : null,
            campaign_id: starterOf(i) === 'campaign' ? campaignId : null,
            status: i % 2 === 0 ? ('open' as const) : ('closed' as const),
            context: null,
            started_at: T0 + i,
            last_message_at: T0 + i + 60_000,
            closed_at: null,
            updated_at: T0 + i,
          })),
        )
        .execute(),
    );
    // Every conversation has the agent's opening template; a customer's has the end user's
    // message first and, a minute later, the end user's last words; the others the agent's reply.
    const messages = ids.flatMap((i) => {
      const of = { orgId: org.id, agentId: agent.id, numberId, providerMessageId: `wamid.c${i}`, at: T0 + i };
      const conversation_id = seeded.conversationIds[i] ?? '';
      const opening = templateMessageRow(of, { id: newId('msg'), to_phone: phoneOf(i), conversation_id });
      if (starterOf(i) === 'customer') return [{ ...opening, created_at: T0 + i + 1 }];
      const reply = templateMessageRow(
        { ...of, providerMessageId: `wamid.r${i}`, at: T0 + i + 60_000 },
        {
          id: newId('msg'),
          to_phone: phoneOf(i),
          conversation_id,
          type: 'message',
          template_name: null,
          text: lastTextOf(i),
        },
      );
      return [opening, reply];
    });
    await insertChunked(messages, (chunk) => trx.insertInto('messages').values(chunk).execute());
    const inbound = ids
      .filter((i) => starterOf(i) === 'customer')
      .flatMap((i) =>
        [
          { at: T0 + i, text: 'Hello', id: `wamid.in${i}` },
          { at: T0 + i + 60_000, text: lastTextOf(i), id: `wamid.last${i}` },
        ].map((m) => ({
          provider_message_id: m.id,
          org_id: org.id,
          number_id: numberId,
          from_phone: phoneOf(i),
          text: m.text,
          sent_at: m.at,
          received_at: m.at,
          conversation_id: seeded.conversationIds[i] ?? '',
          type: 'text',
        })),
      );
    await insertChunked(inbound, (chunk) => trx.insertInto('inbound_messages').values(chunk).execute());

    // Deliveries: the delivered ones point at a message the provider said was delivered.
    const deliveredMessages = ids
      .filter((i) => deliveryStatusOf(i) === 'delivered')
      .map((i) =>
        templateMessageRow(
          { orgId: org.id, agentId: agent.id, numberId, providerMessageId: `wamid.d${i}`, at: T0 + i },
          { id: `msg_dlv${i}`, to_phone: phoneOf(i), status: 'delivered', status_rank: 3 },
        ),
      );
    await insertChunked(deliveredMessages, (chunk) => trx.insertInto('messages').values(chunk).execute());
    await insertChunked(ids, (chunk) =>
      trx
        .insertInto('campaign_deliveries')
        .values(
          chunk.map((i) => {
            const status = deliveryStatusOf(i);
            return {
              id: seeded.deliveryIds[i] ?? '',
              org_id: org.id,
              campaign_id: campaignId,
              to_phone: phoneOf(i),
              parameters: null,
              end_user: null,
              dedupe_key: null,
              state:
                status === 'failed'
                  ? ('failed' as const)
                  : status === 'delivered'
                    ? ('sending' as const)
                    : ('queued' as const),
              message_id: status === 'delivered' ? `msg_dlv${i}` : null,
              claimed_at: null,
              end_user_id: null,
              conversation_id: null,
              error: status === 'failed' ? `Refused ${i}` : null,
              throttles: 0,
              created_at: T0 + i,
              sent_at: status === 'delivered' ? T0 + i : null,
              updated_at: T0 + i,
            };
          }),
        )
        .execute(),
    );
    await insertChunked(ids, (chunk) =>
      trx
        .insertInto('audit_log')
        .values(
          chunk.map((i) => ({
            id: seeded.auditIds[i] ?? '',
            org_id: org.id,
            actor: `person${i}@example.com`,
            action: 'campaign.paused',
            target_type: 'campaign',
            target_id: campaignId,
            details: null,
            at: T0 + i,
          })),
        )
        .execute(),
    );
    await insertChunked(ids, (chunk) =>
      trx
        .insertInto('api_keys')
        .values(
          chunk.map((i) => ({
            id: seeded.keyIds[i] ?? '',
            org_id: org.id,
            label: `Key ${i}`,
            prefix: `prl_us_${String(i).padStart(4, '0')}`,
            hash: `bulk-hash-${seeded.keyIds[i]}`,
            scope: 'organization' as const,
            agent_id: null,
            campaign_id: null,
            permissions: 'channels',
            created_at: T0 + i,
            last_used_at: null,
            revoked_at: i % 4 === 0 ? T0 + ROWS + i : null,
          })),
        )
        .execute(),
    );
  });
  // The statistics autovacuum keeps, so PostgreSQL plans as it would on a live database.
  // Only these tables (a bare ANALYZE reads every schema of the database).
  if (dialect === 'postgres') {
    await sql`analyze campaigns, campaign_deliveries, conversations, end_users, messages, inbound_messages, audit_log, api_keys, triggers`.execute(
      ctx.db,
    );
  }
  return seeded;
}
