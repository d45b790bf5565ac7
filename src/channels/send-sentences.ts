import { clip } from '../shared/clip.js';

/** The sentences of a send's refusals that POST /api/channels/send/check repeats word for word. */
export const unknownAgentSentence = (agentId: string) =>
  `No agent with ID '${clip(agentId, 64)}' in this organization.`;

export const noNumberSentence = (agentId: string) =>
  `Agent '${clip(agentId, 64)}' has no messaging number assigned, so it cannot send messages.`;

export const closedWindowSentence = (to: string) =>
  `${to} has not written to this agent's number in the last 24 hours, so free text cannot be sent; use type 'template' with an approved template.`;
