import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { MEDIA_RETENTION_QUEUE } from '../jobs/queues.js';
import type { Clock } from '../shared/clock.js';
import { listExpiredMedia, markDeleted } from './media.repository.js';
import type { MediaStore } from './media-store.js';

export interface MediaRetentionDeps {
  readonly db: Kysely<DB>;
  readonly store: MediaStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retentionDays: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Files taken per statement, and per sweep at most (the next sweep takes the rest). */
const BATCH = 200;
const PER_SWEEP = 10_000;

/**
 * Deletes the files older than the retention: their bytes from the store, then their row marked
 * `deleted` (kept, so that the file's address can say what became of it). A file whose bytes
 * could not be deleted stays as it is for the next sweep. Resolves with how many were deleted.
 */
export async function sweepExpiredMedia(deps: MediaRetentionDeps): Promise<number> {
  const before = deps.clock.now() - deps.retentionDays * DAY_MS;
  const reason = `deleted after ${deps.retentionDays} days (PARLEY_MEDIA_RETENTION_DAYS)`;
  let deleted = 0;
  const failed = new Set<string>();
  while (deleted < PER_SWEEP) {
    const batch = (await listExpiredMedia(deps.db, before, BATCH + failed.size)).filter((m) => !failed.has(m.id));
    if (batch.length === 0) break;
    for (const media of batch) {
      try {
        if (media.storageKey) await deps.store.delete(media.storageKey);
        await markDeleted(deps.db, media.id, reason, deps.clock.now());
        deleted++;
      } catch (err) {
        failed.add(media.id);
        deps.logger.warn(
          { err, mediaId: media.id },
          'could not delete a file past its retention; the next sweep tries again',
        );
      }
    }
    if (batch.length < BATCH) break;
  }
  if (deleted > 0) deps.logger.info({ deleted, retentionDays: deps.retentionDays }, 'media past its retention deleted');
  return deleted;
}

/** Declares the sweep: once every `everyMs` across the region's nodes. */
export function defineMediaRetention(jobs: JobRunner, deps: MediaRetentionDeps, everyMs: number): void {
  jobs.schedule({
    name: MEDIA_RETENTION_QUEUE,
    everyMs,
    run: async () => {
      await sweepExpiredMedia(deps);
    },
  });
}
