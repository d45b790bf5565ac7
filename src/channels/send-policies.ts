import type { ProviderSend } from '../messaging/index.js';
import {
  consentProblem,
  enforceTemplateCatalogue,
  msgappConsentOf,
  policyRefusal,
  type TemplatePolicyDeps,
} from '../policies/index.js';
import { type SenderDeps, senderOf } from './sender.js';

interface PolicyInput {
  readonly orgId: string;
  readonly agentId: string;
  readonly to: string;
  readonly content: ProviderSend['content'];
}

/** What the catalogue said of a template send: the key epoch it was read under, and whether consent decides too. */
export interface CatalogueChecked {
  readonly epoch: number | undefined;
  readonly consentApplies: boolean;
}

/**
 * The number's template catalogue (when synced), before anything is stored or sent (src/policies/).
 * The agent and its number come from memory; an agent without one is left to the send, which
 * answers 404 or 400 for it. Resolves with the key epoch the catalogue was read under (the send's
 * recipient read sees the database's, and checks again when it differs: a catalogue changed on
 * another node meanwhile) and whether the recipient's consent decides the send too: the send's
 * recipient read brings that consent, and `refuseOptedOut` judges it.
 */
export async function checkSendCatalogue(
  ctx: SenderDeps & TemplatePolicyDeps,
  input: PolicyInput,
  /** The key epoch a statement of the send read since (the check is then made against it). */
  seenEpoch?: number,
): Promise<CatalogueChecked | undefined> {
  const { content } = input;
  if (content.kind !== 'template') return undefined;
  const sender = await senderOf(ctx, input.orgId, input.agentId);
  if (!sender?.numberId) return undefined;
  return enforceTemplateCatalogue(
    ctx,
    {
      orgId: input.orgId,
      numberId: sender.numberId,
      to: input.to,
      name: content.name,
      language: content.language,
      header: content.header,
      body: content.body,
    },
    seenEpoch,
  );
}

/** Throws the consent rule's refusal when the recipient's stored consent (JSON text) opted out of this send. */
export function refuseOptedOut(ctx: TemplatePolicyDeps, input: PolicyInput, consent: string | null | undefined): void {
  if (input.content.kind !== 'template') return;
  const problem = consentProblem(
    ctx,
    { to: input.to, name: input.content.name, language: input.content.language },
    msgappConsentOf(consent),
  );
  if (problem) throw policyRefusal('consent', problem);
}
