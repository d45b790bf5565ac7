import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { isTimeZone, minutesOf, type QuietHours, quietUntil } from './quiet-hours.js';
import { findSendingRules, markDeliveryHeld, templatesSentTo, upsertSendingRules } from './sending-rules.repository.js';

/** An organization's sending rules: quiet hours for campaign deliveries and a marketing frequency cap. */

export interface SendingRules {
  /** null: off. */
  quietHours: QuietHours | null;
  /** Marketing templates an end user may receive in 24 hours; null: no cap. */
  marketingCap: number | null;
}

export const MAX_MARKETING_CAP = 100;

export async function getSendingRules(db: Kysely<DB>, orgId: string): Promise<SendingRules> {
  const row = await findSendingRules(db, orgId);
  const quiet =
    row?.quiet_start && row.quiet_end && row.time_zone
      ? { start: row.quiet_start, end: row.quiet_end, timeZone: row.time_zone }
      : null;
  return { quietHours: quiet, marketingCap: row?.marketing_cap ?? null };
}

/** What a change gives: `null` turns a rule off, undefined leaves it. */
export interface SendingRulesChange {
  /** `HH:MM-HH:MM`, or null (off). */
  quietHours?: string | null;
  timeZone?: string;
  marketingCap?: number | null;
}

const invalid = (field: string, message: string) => new AppError('INVALID_BODY', message, { details: { field } });

/** Reads `21:00-08:00`; throws naming the field. */
export function parseQuietHours(text: string): { start: string; end: string } {
  const m = /^\s*(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})\s*$/.exec(text);
  const pad = (t: string) => t.padStart(5, '0');
  const start = m?.[1] ? pad(m[1]) : '';
  const end = m?.[2] ? pad(m[2]) : '';
  if (minutesOf(start) === undefined || minutesOf(end) === undefined) {
    throw invalid('quietHours', 'Quiet hours must be written HH:MM-HH:MM (24-hour), such as 21:00-08:00.');
  }
  if (start === end) throw invalid('quietHours', 'Quiet hours must start and end at different times.');
  return { start, end };
}

export async function updateSendingRules(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  change: SendingRulesChange,
): Promise<SendingRules> {
  const current = await getSendingRules(db, orgId);
  let quiet = current.quietHours;
  if (change.timeZone !== undefined && !isTimeZone(change.timeZone)) {
    throw invalid(
      'timeZone',
      `"${change.timeZone.slice(0, 64)}" is not a time zone (use an IANA name such as Europe/Lisbon).`,
    );
  }
  if (change.quietHours === null) quiet = null;
  else if (change.quietHours !== undefined) {
    const timeZone = change.timeZone ?? current.quietHours?.timeZone;
    if (!timeZone) throw invalid('timeZone', 'Quiet hours need a time zone (such as Europe/Lisbon).');
    quiet = { ...parseQuietHours(change.quietHours), timeZone };
  } else if (change.timeZone !== undefined && quiet) quiet = { ...quiet, timeZone: change.timeZone };
  let cap = current.marketingCap;
  if (change.marketingCap !== undefined) {
    if (
      change.marketingCap !== null &&
      (!Number.isInteger(change.marketingCap) || change.marketingCap < 1 || change.marketingCap > MAX_MARKETING_CAP)
    ) {
      throw invalid(
        'marketingCap',
        `The marketing cap must be a whole number from 1 to ${MAX_MARKETING_CAP} (or off).`,
      );
    }
    cap = change.marketingCap;
  }
  await upsertSendingRules(db, {
    org_id: orgId,
    quiet_start: quiet?.start ?? null,
    quiet_end: quiet?.end ?? null,
    time_zone: quiet?.timeZone ?? change.timeZone ?? current.quietHours?.timeZone ?? null,
    marketing_cap: cap,
    updated_at: clock.now(),
  });
  return { quietHours: quiet, marketingCap: cap };
}

/** The rules in words (the CLI and the dashboard). */
export function describeSendingRules(rules: SendingRules): string {
  const quiet = rules.quietHours
    ? `quiet hours ${rules.quietHours.start}-${rules.quietHours.end} ${rules.quietHours.timeZone}`
    : 'no quiet hours';
  const cap = rules.marketingCap === null ? 'no marketing cap' : `marketing cap ${rules.marketingCap} a day`;
  return `${quiet}, ${cap}`;
}

/** What a campaign delivery may do now under its organization's rules. */
export type SendingDecision = { kind: 'send' } | { kind: 'wait'; until: number } | { kind: 'capped' };

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Quiet hours first (a held delivery is marked with when it goes on), then the marketing cap:
 * templates of the MARKETING category the end user's phone received from the organization in the
 * last 24 hours (those the provider took). Two deliveries to one phone racing each other can both
 * pass the cap; the cap is a courtesy limit, not a lock.
 */
export async function sendingDecision(
  db: Kysely<DB>,
  input: {
    orgId: string;
    deliveryId: string;
    phone: string;
    now: number;
    template: { name: string; language: string | null };
    isMarketing: (template: { name: string; language: string | null }) => Promise<boolean>;
  },
): Promise<SendingDecision> {
  const rules = await getSendingRules(db, input.orgId);
  if (rules.quietHours) {
    const until = quietUntil(rules.quietHours, input.now);
    if (until !== undefined) {
      await markDeliveryHeld(db, input.deliveryId, until);
      return { kind: 'wait', until };
    }
  }
  if (rules.marketingCap !== null && (await input.isMarketing(input.template))) {
    let received = 0;
    for (const t of await templatesSentTo(db, input.orgId, input.phone, input.now - DAY_MS)) {
      if (await input.isMarketing(t)) received += t.count;
    }
    if (received >= rules.marketingCap) return { kind: 'capped' };
  }
  return { kind: 'send' };
}
