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
 */
export async function checkSendPolicies(ctx: SenderDeps & TemplatePolicyDeps, input: PolicyInput): Promise<void> {
  const { content } = input;
  if (content.kind !== 'template') return;
  const sender = await senderOf(ctx, input.orgId, input.agentId);
  if (!sender?.numberId) return;
  await enforceTemplatePolicies(ctx, {
    orgId: input.orgId,
    numberId: sender.numberId,
    to: input.to,
    name: content.name,
    language: content.language,
    header: content.header,
    body: content.body,
  });
}
