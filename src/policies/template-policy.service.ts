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

/** What a consent says of the msgapp channel (`consent.msgapp`). */
interface ConsentState {
  readonly status?: unknown;
  readonly source?: unknown;
}

/** The msgapp part of an end user's stored consent JSON (undefined when absent or unreadable). */
export function msgappConsentOf(text: string | null | undefined): ConsentState | undefined {
  if (!text) return undefined;
  try {
    return (JSON.parse(text) as { msgapp?: ConsentState }).msgapp;
  } catch {
    return undefined;
  }
}

/** The recipient's msgapp consent, when they are an end user of the organization and have one. */
async function consentOf(deps: CatalogueDeps, orgId: string, to: string): Promise<ConsentState | undefined> {
  const phone = endUserPhoneOf(to);
  if (!phone) return undefined;
  return msgappConsentOf(await consentOfPhone(deps.db, orgId, phone));
}

/**
 * What the catalogue alone says of a template send, and whether the recipient's consent then
 * decides it too (`consentApplies`): a `MARKETING` template, or any with PARLEY_OPT_OUT_STRICT.
 */
export async function judgeTemplateCatalogue(
  deps: TemplatePolicyDeps,
  input: TemplateSendInput,
  seenEpoch?: number,
): Promise<TemplateVerdict & { readonly consentApplies: boolean }> {
  const { catalogue, epoch } = await catalogueOf(deps, input.orgId, input.numberId, seenEpoch);
  const { category, ...problems } = catalogueProblems(catalogue, input);
  const strict = deps.config.policies?.optOutStrict === true;
  return { epoch, synced: catalogue.synced, category, problems, consentApplies: strict || category === 'MARKETING' };
}

/** The consent rule's sentence for a send the recipient's consent refuses; undefined when it may go. */
export function consentProblem(
  deps: TemplatePolicyDeps,
  input: Pick<TemplateSendInput, 'to' | 'name' | 'language'>,
  consent: ConsentState | undefined,
): string | undefined {
  if (consent?.status !== 'denied') return undefined;
  const source = typeof consent.source === 'string' ? `, source ${consent.source}` : '';
  return deps.config.policies?.optOutStrict === true
    ? `${input.to} opted out (consent.msgapp is denied${source}), and no template is sent to an end user who opted out here`
    : `${input.to} opted out of marketing messages (consent.msgapp is denied${source}); template ${input.name} (${input.language}) is MARKETING, so it is not sent`;
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
  const { consentApplies, ...verdict } = await judgeTemplateCatalogue(deps, input, seenEpoch);
  if (!consentApplies) return verdict;
  const consent = consentProblem(deps, input, await consentOf(deps, input.orgId, input.to));
  return consent ? { ...verdict, problems: { ...verdict.problems, consent } } : verdict;
}

/** A send refused by a policy: a 400 whose details say which rule (a campaign records `opted_out`). */
export const policyRefusal = (rule: TemplateRule, sentence: string): AppError =>
  new AppError('INVALID_BODY', `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`, {
    details: { rule, ...(rule === 'consent' ? { reason: 'opted_out' } : {}) },
  });

/**
 * The send path's check, before anything is stored or sent: throws the catalogue's first problem
 * (template, then parameters); else resolves with the key epoch the catalogue was read under and
 * whether the recipient's consent decides the send too. The send reads that consent with its
 * recipient, in the statement it makes anyway, and refuses with `consentProblem`.
 */
export async function enforceTemplateCatalogue(
  deps: TemplatePolicyDeps,
  input: TemplateSendInput,
  seenEpoch?: number,
): Promise<{ epoch: number | undefined; consentApplies: boolean }> {
  const { problems, epoch, consentApplies } = await judgeTemplateCatalogue(deps, input, seenEpoch);
  for (const rule of ['template', 'parameters'] as const) {
    const problem = problems[rule];
    if (problem) throw policyRefusal(rule, problem);
  }
  return { epoch, consentApplies };
}
