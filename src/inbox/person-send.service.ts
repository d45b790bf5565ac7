import { createHash } from 'node:crypto';
import { checkBody } from '../channels/channel.service.js';
import { type SendDeps, sendFailureError, sendFromAgent } from '../channels/index.js';
import { claimAuthor, deleteAuthor, getConversationRow, markAnswered, messageExists } from '../conversations/index.js';
import { getEndUser } from '../end-users/index.js';
import { publishLive } from '../live/index.js';
import type { AfterAnswer } from '../shared/after-answer.js';
import { AppError, isAppError } from '../shared/errors.js';
import { emitMessageSent } from './message-sent.events.js';

/** A person of the dashboard who sends or acts: the name events and the thread show is their email. */
export interface Person {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
}

/** What a person's send uses: a send from the agent's number, the API's limits, the metrics. */
export interface PersonSendDeps extends SendDeps {
  readonly afterAnswer: AfterAnswer;
  /** The API's limits: a person counts as a key of their own, within the organization's limit. */
  readonly sendRateLimiter: {
    consume(subject: { keyId: string; orgId: string }): Promise<{
      allowed: boolean;
      retryAfterSeconds: number;
      binding: { name: string; quota: number };
    }>;
    readonly windowSeconds: number;
  };
  /** Called with the seconds from a handoff to the first answer of a person after it. */
  readonly onFirstReply?: ((seconds: number) => void) | undefined;
}

/** What a person sends: free text, or a template (outside the 24-hour window). */
export type PersonContent =
  | { readonly kind: 'text'; readonly text: string }
  | {
      readonly kind: 'template';
      readonly name: string;
      readonly language: string;
      readonly body: readonly string[];
      readonly header: readonly string[];
    };

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A message ID derived from what identifies one send (the same send always gets the same ID). */
export function derivedMessageId(...parts: string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  let out = '';
  for (let i = 0; out.length < 22; i++) out += BASE62[(digest[i] ?? 0) % 62];
  return `msg_${out}`;
}

/**
 * A person's message to the end user of a conversation people hold, from the agent's number and
 * through the same send as the API's: the API's checks of the body, its rate limits, the 24-hour
 * window, the provider. `sendKey` is the composer's own key (a new one each time it is shown), from
 * which the message's ID is derived: a second submission of the same form (a double click) sends
 * nothing more and answers `duplicate`. The message is stored with who sent it; `message.sent` is
 * raised, nobody waits any more, and open inbox pages are told.
 */
export async function sendAsPerson(
  deps: PersonSendDeps,
  person: Person,
  conversationId: string,
  content: PersonContent,
  sendKey: string,
): Promise<{ id: string; duplicate: boolean }> {
  const conversation = await getConversationRow(deps.db, { orgId: person.orgId, agentId: null }, conversationId);
  if (conversation.status === 'closed') {
    throw new AppError('INVALID_BODY', 'This conversation is closed: nothing more can be sent in it.');
  }
  if (conversation.handler !== 'human') {
    throw new AppError('INVALID_BODY', 'The bot handles this conversation: take it over before replying.');
  }
  if (!/^[A-Za-z0-9_-]{8,64}$/.test(sendKey)) {
    throw new AppError('INVALID_BODY', 'This form has expired: reload the page and send again.');
  }
  const id = derivedMessageId(person.orgId, person.id, sendKey);
  if (await messageExists(deps.db, id)) return { id, duplicate: true };
  const endUser = await findEndUser(deps, person.orgId, conversation.end_user_id);
  if (!endUser?.phone) {
    throw new AppError('INVALID_BODY', 'This end user has no phone number to send to.');
  }
  // The same checks as the body of POST /api/channels/send, each with its own sentence.
  const checked = checkBody(
    content.kind === 'text'
      ? { channel: 'msgapp', to: endUser.phone, type: 'message', message: { text: content.text } }
      : {
          channel: 'msgapp',
          to: endUser.phone,
          type: 'template',
          template: {
            name: content.name,
            language: content.language,
            parameters: { body: [...content.body], header: [...content.header] },
          },
        },
  );
  const now = deps.clock.now();
  const claimed = await claimAuthor(deps.db, {
    message_id: id,
    org_id: person.orgId,
    kind: 'user',
    user_id: person.id,
    name: person.name,
    created_at: now,
  });
  if (!claimed) return { id, duplicate: true };
  // The API's limits, counted once per message (a repeated form was answered above).
  const decision = await deps.sendRateLimiter.consume({ keyId: `user:${person.id}`, orgId: person.orgId });
  if (!decision.allowed) {
    await deleteAuthor(deps.db, id);
    const whose = decision.binding.name === 'key' ? 'you' : 'this organization';
    throw new AppError(
      'RATE_LIMITED',
      `Too many messages: ${whose} may send ${decision.binding.quota} per ${deps.sendRateLimiter.windowSeconds} seconds. Try again in ${decision.retryAfterSeconds} seconds.`,
    );
  }
  let result: Awaited<ReturnType<typeof sendFromAgent>>;
  try {
    result = await sendFromAgent(deps, {
      orgId: person.orgId,
      agentId: conversation.agent_id,
      to: checked.to,
      content: checked.content,
      conversation: { origin: 'manual', required: false },
      messageId: id,
      afterAnswer: deps.afterAnswer,
    });
  } catch (err) {
    // Refused before anything was stored (the window, the number): the same form may be sent again.
    if (!(await messageExists(deps.db, id))) await deleteAuthor(deps.db, id);
    throw err;
  }
  if (!result.ok) throw sendFailureError(result);
  const answered = await markAnswered(deps.db, conversation.id, deps.clock.now());
  if (answered?.handoff_at !== null && answered?.handoff_at !== undefined && answered.human_replied_at === null) {
    deps.onFirstReply?.(Math.max(0, deps.clock.now() - answered.handoff_at) / 1000);
  }
  await emitMessageSent(deps, {
    orgId: person.orgId,
    agentId: conversation.agent_id,
    conversationId: result.conversationId ?? conversation.id,
    endUserId: conversation.end_user_id,
    to: checked.to,
    id,
    messageId: result.messageId,
    content: checked.content,
    sentBy: { type: 'user', id: person.id, name: person.name },
    at: deps.clock.now(),
  });
  await publishLive(deps.db, { orgId: person.orgId, conversationIds: [conversation.id], kind: 'message' });
  return { id, duplicate: false };
}

/** The end user of a conversation, or undefined when the record was deleted since. */
export async function findEndUser(deps: Pick<SendDeps, 'db'>, orgId: string, id: string) {
  try {
    return await getEndUser(deps.db, orgId, id);
  } catch (err) {
    if (isAppError(err) && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}
