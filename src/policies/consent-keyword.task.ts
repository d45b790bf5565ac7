import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { updateEndUser } from '../end-users/end-user.service.js';
import { emitEvent, eventId } from '../events/event.service.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { CONSENT_KEYWORD_QUEUE } from '../jobs/queues.js';
import type { Clock } from '../shared/clock.js';
import { isAppError } from '../shared/errors.js';
import { agentOfNumber } from './consent-rules.repository.js';
import { getConsentRules, keywordOf } from './consent-rules.service.js';

/** An inbound text of one word, queued by messaging once the message was stored and handed on. */
export interface ConsentKeywordJob {
  readonly orgId: string;
  readonly numberId: string;
  readonly endUserId: string;
  /** E.164. */
  readonly from: string;
  readonly word: string;
  readonly providerMessageId: string;
  readonly at: number;
}

export interface ConsentKeywordDeps {
  readonly db: Kysely<DB>;
  readonly jobs: JobRunner;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Sends the organization's opt-out reply from the agent's number (free text: the window was just opened). */
  readonly reply: (input: { orgId: string; agentId: string; to: string; text: string }) => Promise<void>;
}

/**
 * An opt-out (or opt-in) keyword: the end user's `consent.msgapp` becomes `denied` (`granted`)
 * with the source `keyword:<WORD>`, `enduser.opted_out` (`enduser.opted_in`) is raised, and the
 * organization's opt-out reply, if any, goes back at once. A word that is neither does nothing.
 */
export async function applyConsentKeyword(deps: ConsentKeywordDeps, job: ConsentKeywordJob): Promise<void> {
  const rules = await getConsentRules(deps.db, job.orgId);
  const word = keywordOf(job.word);
  const status = rules.optOutKeywords.includes(word) ? 'denied' : rules.optInKeywords.includes(word) ? 'granted' : null;
  if (!status) return;
  const source = `keyword:${word}`;
  try {
    await updateEndUser(deps.db, deps.clock, job.orgId, job.endUserId, {
      consent: { msgapp: { status, source, updatedAt: job.at } },
    });
  } catch (err) {
    // Deleted since it wrote: nobody to record it on.
    if (isAppError(err) && err.code === 'NOT_FOUND') return;
    throw err;
  }
  const agentId = await agentOfNumber(deps.db, job.orgId, job.numberId);
  if (!agentId) return;
  const type = status === 'denied' ? 'enduser.opted_out' : 'enduser.opted_in';
  await emitEvent(deps, {
    id: eventId(type, job.providerMessageId),
    type,
    orgId: job.orgId,
    agentId,
    data: {
      endUserId: job.endUserId,
      phone: job.from,
      channel: 'msgapp',
      consent: { status, source, updatedAt: job.at },
      keyword: word,
      messageId: job.providerMessageId,
    },
    at: job.at,
  });
  if (status === 'denied' && rules.optOutReply) {
    try {
      await deps.reply({ orgId: job.orgId, agentId, to: job.from, text: rules.optOutReply });
    } catch (err) {
      deps.logger.warn({ err, orgId: job.orgId, to: job.from }, 'the opt-out reply could not be sent');
    }
  }
}

export function defineConsentKeywordQueue(jobs: JobRunner, deps: ConsentKeywordDeps): void {
  jobs.define<ConsentKeywordJob>({
    name: CONSENT_KEYWORD_QUEUE,
    concurrency: 2,
    retryDelaysMs: [1_000, 10_000],
    handler: (payload) => applyConsentKeyword(deps, payload),
  });
}
