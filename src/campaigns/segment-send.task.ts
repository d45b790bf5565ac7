import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { findSegmentById, type MemberSlice, membersAfter } from '../segments/segment.service.js';
import type { Clock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import { parseInternationalPhone } from '../shared/phone.js';
import {
  CAMPAIGN_DISPATCH_QUEUE,
  type CampaignDispatchJob,
  SEGMENT_SEND_QUEUE,
  type SegmentSendJob,
} from './campaign.queues.js';
import { claimDedupeKeys, insertDeliveries } from './campaign.repository.js';
import type { CampaignDeliveryTable, SegmentSendTable } from './campaign.tables.js';
import { advanceSegmentSend, findSegmentSendById, moveSegmentSend } from './segment-send.repository.js';

/** Members read, and deliveries stored, per transaction. */
const SLICE = 1_000;

export interface SegmentSendDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly jobs: JobRunner;
}

/** Thrown inside a slice's transaction to roll it back: another run already took this slice. */
class SliceTaken extends Error {}

/**
 * The segment-send queue: at the send's time, reads the segment's members once, in ID order, and
 * turns each into a delivery of the campaign, as a post to its webhook would (the dispatch and
 * delivery queues take them from there: pacing, pause, retries).
 *
 * Exactly once across all nodes: the job runner gives the job to one node at a time (a lease), the
 * run starts only by moving the send from `scheduled` to `running` (a compare-and-set: a cancel or
 * a second run loses), and each slice of 1,000 members is stored in one transaction with the
 * send's progress, which moves only from the member it expects: a run taken over after a crash
 * goes on from the last slice stored, and one racing another stores nothing twice. Each delivery
 * also carries the dedupe key `send:<sendId>:<endUserId>`, so no member is sent twice by one send.
 */
export class SegmentSender {
  constructor(private readonly deps: SegmentSendDeps) {}

  define(jobs: JobRunner): void {
    jobs.define<SegmentSendJob>({
      name: SEGMENT_SEND_QUEUE,
      concurrency: 1,
      handler: (payload) => this.run(payload.sendId),
      onLastFailure: async (payload, _job, err) => {
        const { db, clock } = this.deps;
        const reason = err instanceof Error ? err.message : String(err);
        await moveSegmentSend(db, payload.sendId, 'running', 'done', clock.now(), {
          finished_at: clock.now(),
          error: `The send stopped before every member was read: ${reason}`.slice(0, 1000),
        });
      },
    });
  }

  async run(sendId: string): Promise<void> {
    const { db, clock } = this.deps;
    let send = await findSegmentSendById(db, sendId);
    if (!send || send.status === 'done' || send.status === 'canceled') return;
    const segment = await findSegmentById(db, send.org_id, send.segment_id);
    if (send.status === 'scheduled') {
      const now = clock.now();
      if (!segment) {
        await moveSegmentSend(db, send.id, 'scheduled', 'canceled', now, {
          finished_at: now,
          error: 'The segment was deleted before the send ran.',
        });
        return;
      }
      if (!(await moveSegmentSend(db, send.id, 'scheduled', 'running', now, { started_at: now }))) return;
      send = { ...send, status: 'running', started_at: now };
    }
    if (!segment) {
      const now = clock.now();
      await moveSegmentSend(db, send.id, 'running', 'done', now, {
        finished_at: now,
        error: 'The segment was deleted while the send ran.',
      });
      return;
    }
    let after = send.after_end_user_id;
    for (;;) {
      const members = await membersAfter(db, send.org_id, segment.filter, after, SLICE);
      if (members.length === 0) break;
      const stored = await this.storeSlice(send, after, members);
      if (!stored) return; // another run holds this send
      after = members[members.length - 1]?.id ?? after;
    }
    const now = clock.now();
    await moveSegmentSend(db, send.id, 'running', 'done', now, { finished_at: now });
  }

  /** One slice: its deliveries, their dedupe keys, their dispatch job and the send's progress, together. */
  private async storeSlice(send: SegmentSendTable, after: string, members: readonly MemberSlice[]): Promise<boolean> {
    const { db, clock, jobs } = this.deps;
    const now = clock.now();
    const rows: CampaignDeliveryTable[] = [];
    let optedOut = 0;
    let skipped = 0;
    for (const m of members) {
      if (m.denied) {
        optedOut++;
        continue;
      }
      const phone = parseInternationalPhone(m.msgapp ?? m.phone ?? '');
      if (!phone.ok) {
        skipped++;
        continue;
      }
      rows.push({
        id: newId('dlv'),
        org_id: send.org_id,
        campaign_id: send.campaign_id,
        to_phone: phone.e164,
        parameters: send.parameters,
        end_user: null,
        dedupe_key: `send:${send.id}:${m.id}`,
        state: 'queued',
        message_id: null,
        claimed_at: null,
        end_user_id: m.id,
        conversation_id: null,
        error: null,
        throttles: 0,
        created_at: now,
        sent_at: null,
        updated_at: now,
      });
    }
    const last = members[members.length - 1]?.id ?? after;
    try {
      await db.transaction().execute(async (trx) => {
        // First, so that a second run of the same slice waits here (PostgreSQL) and then finds it taken.
        const owners =
          rows.length > 0
            ? await claimDedupeKeys(
                trx,
                rows.map((r) => ({
                  campaign_id: r.campaign_id,
                  dedupe_key: r.dedupe_key ?? '',
                  delivery_id: r.id,
                  created_at: now,
                })),
              )
            : new Map<string, string>();
        const fresh = rows.filter((r) => owners.get(r.dedupe_key ?? '') === r.id);
        const counts = {
          members: members.length,
          accepted: fresh.length,
          duplicates: rows.length - fresh.length,
          optedOut,
          skipped,
        };
        if (!(await advanceSegmentSend(trx, send.id, after, last, counts, now))) throw new SliceTaken();
        await insertDeliveries(trx, fresh);
        if (fresh.length > 0) {
          await jobs.enqueue<CampaignDispatchJob>(
            CAMPAIGN_DISPATCH_QUEUE,
            { campaignId: send.campaign_id, deliveryIds: fresh.map((r) => r.id) },
            { db: trx },
          );
        }
      });
    } catch (err) {
      if (err instanceof SliceTaken) return false;
      throw err;
    }
    return true;
  }
}
