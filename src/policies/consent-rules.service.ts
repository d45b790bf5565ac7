import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { findConsentRules, upsertConsentRules } from './consent-rules.repository.js';

/** The words that opt an end user out of (or back into) an organization's messages, and the reply to an opt-out. */
export interface ConsentRules {
  readonly optOutKeywords: readonly string[];
  readonly optInKeywords: readonly string[];
  /** Sent back at once to an end user who opted out; null: nothing is sent. */
  readonly optOutReply: string | null;
}

export const DEFAULT_OPT_OUT_KEYWORDS = ['STOP', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'STOPALL'] as const;
export const DEFAULT_OPT_IN_KEYWORDS = ['START', 'UNSTOP', 'SUBSCRIBE'] as const;

export const DEFAULT_CONSENT_RULES: ConsentRules = {
  optOutKeywords: DEFAULT_OPT_OUT_KEYWORDS,
  optInKeywords: DEFAULT_OPT_IN_KEYWORDS,
  optOutReply: null,
};

/** A keyword as an inbound text is compared with it: trimmed, upper case. */
export const keywordOf = (text: string): string => text.trim().toUpperCase();

/** The longest keyword; an inbound text longer than this (trimmed) is never one. */
export const MAX_KEYWORD = 32;
const MAX_KEYWORDS = 20;
const MAX_REPLY = 1024;

const parseList = (text: string): string[] => {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.filter((w): w is string => typeof w === 'string') : [];
  } catch {
    return [];
  }
};

/** The organization's rules (the defaults until it sets its own). */
export async function getConsentRules(db: Kysely<DB>, orgId: string): Promise<ConsentRules> {
  const row = await findConsentRules(db, orgId);
  if (!row) return DEFAULT_CONSENT_RULES;
  return {
    optOutKeywords: parseList(row.opt_out_keywords),
    optInKeywords: parseList(row.opt_in_keywords),
    optOutReply: row.opt_out_reply,
  };
}

/** A list of keywords as given (comma-separated or an array): each one word, upper-cased, no duplicates. */
export function cleanKeywords(input: string | readonly string[], field: string): string[] {
  const words = (typeof input === 'string' ? input.split(',') : [...input]).map(keywordOf).filter((w) => w !== '');
  if (words.length > MAX_KEYWORDS) throw new AppError('INVALID_BODY', `${field}: at most ${MAX_KEYWORDS} keywords`);
  for (const w of words) {
    if (w.length > MAX_KEYWORD || !/^[\p{L}\p{N}_-]+$/u.test(w)) {
      throw new AppError(
        'INVALID_BODY',
        `${field}: "${clip(w, 40)}" is not a keyword (one word of letters and digits, at most ${MAX_KEYWORD} characters)`,
      );
    }
  }
  return [...new Set(words)];
}

export interface ConsentRulesPatch {
  readonly optOutKeywords?: string | readonly string[] | undefined;
  readonly optInKeywords?: string | readonly string[] | undefined;
  /** An empty text removes the reply. */
  readonly optOutReply?: string | null | undefined;
}

/** Changes some of an organization's rules; the others stay. A word in both lists is refused. */
export async function updateConsentRules(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  patch: ConsentRulesPatch,
): Promise<ConsentRules> {
  await getOrganization(db, orgId);
  const current = await getConsentRules(db, orgId);
  const optOut =
    patch.optOutKeywords !== undefined
      ? cleanKeywords(patch.optOutKeywords, 'opt-out keywords')
      : current.optOutKeywords;
  const optIn =
    patch.optInKeywords !== undefined ? cleanKeywords(patch.optInKeywords, 'opt-in keywords') : current.optInKeywords;
  const both = optOut.filter((w) => optIn.includes(w));
  if (both.length > 0) {
    throw new AppError('INVALID_BODY', `a keyword cannot both opt out and opt in: ${both.join(', ')}`);
  }
  let reply = current.optOutReply;
  if (patch.optOutReply !== undefined) {
    const text = patch.optOutReply?.trim() ?? '';
    if ([...text].length > MAX_REPLY)
      throw new AppError('INVALID_BODY', `the opt-out reply is at most ${MAX_REPLY} characters`);
    reply = text === '' ? null : text;
  }
  await upsertConsentRules(db, {
    org_id: orgId,
    opt_out_keywords: JSON.stringify(optOut),
    opt_in_keywords: JSON.stringify(optIn),
    opt_out_reply: reply,
    updated_at: clock.now(),
  });
  return { optOutKeywords: optOut, optInKeywords: optIn, optOutReply: reply };
}
