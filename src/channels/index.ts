/**
 * What other features use of channels: a send from an agent's number (triggers, campaigns,
 * conversations) and what its caller is told. Routes stay out (they import the application's
 * context, which builds a campaign's deliverer from this).
 */
export {
  type ConversationOfSend,
  conversationDeps,
  type SendDeps,
  type SendFromAgentInput,
  type SendFromAgentResult,
  sendFromAgent,
} from './send-from-agent.js';
export { rejectionSentence, SendOutcomeUnknown, sendClaimExpiryMs, sendFailureError } from './send-outcome.js';
