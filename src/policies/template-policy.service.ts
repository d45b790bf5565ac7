import { AppError } from '../shared/errors.js';
import { endUserPhoneOf } from '../shared/phone.js';
import { type CatalogueDeps, catalogueOf } from './catalogue.js';
import { consentOfPhone } from './consent.fast.js';
import { catalogueProblems } from './template-check.service.js';

/** What a template send's policies need: the catalogue, the consent read, and how strict opt-out is. */
export interface TemplatePolicyDeps extends CatalogueDeps {
  readonly config: { readonly policies?: { readonly optOutStrict: boolean } };
}

export interface TemplateSendInput {
  readonly orgId: string;
  readonly numberId: string;
  /** E.164. */
  readonly to: string;
  readonly name: string;
  readonly language: string;
  readonly header: readonly string[];
  readonly body: readonly string[];
}

/** The rules a template send is judged by, in the order a check reports them. */
export type TemplateRule = 'template' | 'parameters' | 'consent';

/** What the catalogue and the recipient's consent say of a template send: each rule's problem, if any. */
export interface TemplateVerdict {
  /** The key epoch the catalogue was read under (a send checks again if its own read sees another). */
  readonly epoch: number | undefined;
  /** Whether the number's catalogue was ever synced (else the provider's answer decides). */
  readonly synced: boolean;
  readonly category: string | undefined;
  readonly problems: Partial<Record<TemplateRule, string>>;
}

interface ConsentState {
  readonly status?: unknown;
  readonly source?: unknown;
}

/** The recipient's msgapp consent, when they are an end user of the organization and have one. */
async function consentOf(deps: CatalogueDeps, orgId: string, to: string): Promise<ConsentState | undefined> {
  const phone = endUserPhoneOf(to);
  if (!phone) return undefined;
  const text = await consentOfPhone(deps.db, orgId, phone);
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as { msgapp?: ConsentState };
    return parsed.msgapp;
  } catch {
    return undefined;
  }
}

/**
 * Judges a template send by the number's catalogue (when it was synced) and the recipient's
 * consent: a `MARKETING` template (any template with PARLEY_OPT_OUT_STRICT) to an end user whose
 * `consent.msgapp.status` is `denied` is refused. Reads the database only for what it must: the
 * catalogue from memory, the consent only for a send it can refuse.
 */
export async function judgeTemplateSend(
  deps: TemplatePolicyDeps,
  input: TemplateSendInput,
  seenEpoch?: number,
): Promise<TemplateVerdict> {
  const { catalogue, epoch } = await catalogueOf(deps, input.orgId, input.numberId, seenEpoch);
  const { category, ...problems } = catalogueProblems(catalogue, input);
  const strict = deps.config.policies?.optOutStrict === true;
  const verdict: {
    epoch: number | undefined;
    synced: boolean;
    category: string | undefined;
    problems: Partial<Record<TemplateRule, string>>;
  } = {
    epoch,
    synced: catalogue.synced,
    category,
    problems,
  };
  if (strict || category === 'MARKETING') {
    const consent = await consentOf(deps, input.orgId, input.to);
    if (consent?.status === 'denied') {
      const source = typeof consent.source === 'string' ? `, source ${consent.source}` : '';
      verdict.problems.consent = strict
        ? `${input.to} opted out (consent.msgapp is denied${source}), and no template is sent to an end user who opted out here`
        : `${input.to} opted out of marketing messages (consent.msgapp is denied${source}); template ${input.name} (${input.language}) is MARKETING, so it is not sent`;
    }
  }
  return verdict;
}

/** A send refused by a policy: a 400 whose details say which rule (a campaign records `opted_out`). */
export const policyRefusal = (rule: TemplateRule, sentence: string): AppError =>
  new AppError('INVALID_BODY', `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`, {
    details: { rule, ...(rule === 'consent' ? { reason: 'opted_out' } : {}) },
  });

/**
 * Throws the first problem of a template send, in the order template, parameters, consent; else
 * resolves with the key epoch the catalogue was read under.
 */
export async function enforceTemplatePolicies(
  deps: TemplatePolicyDeps,
  input: TemplateSendInput,
  seenEpoch?: number,
): Promise<number | undefined> {
  const { problems, epoch } = await judgeTemplateSend(deps, input, seenEpoch);
  for (const rule of ['template', 'parameters', 'consent'] as const) {
    const problem = problems[rule];
    if (problem) throw policyRefusal(rule, problem);
  }
  return epoch;
}
