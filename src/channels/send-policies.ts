import type { ProviderSend } from '../messaging/index.js';
import { enforceTemplatePolicies, type TemplatePolicyDeps } from '../policies/index.js';
import { type SenderDeps, senderOf } from './sender.js';

interface PolicyInput {
  readonly orgId: string;
  readonly agentId: string;
  readonly to: string;
  readonly content: ProviderSend['content'];
}

/**
 * The policies a template send meets before anything is stored or sent: the number's template
 * catalogue (when synced) and the recipient's consent (src/policies/). The agent and its number
 * come from memory; an agent without one is left to the send, which answers 404 or 400 for it.
 * Resolves with the key epoch the catalogue was read under: the send's recipient read sees the
 * database's, and checks again when it differs (a catalogue changed on another node meanwhile).
 */
export async function checkSendPolicies(
  ctx: SenderDeps & TemplatePolicyDeps,
  input: PolicyInput,
  /** The key epoch a statement of the send read since (the check is then made against it). */
  seenEpoch?: number,
): Promise<{ epoch: number | undefined } | undefined> {
  const { content } = input;
  if (content.kind !== 'template') return undefined;
  const sender = await senderOf(ctx, input.orgId, input.agentId);
  if (!sender?.numberId) return undefined;
  const epoch = await enforceTemplatePolicies(
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
  return { epoch };
}
