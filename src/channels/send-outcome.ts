/** What a caller is told of a send that did not go through: the sentences and the API's errors. */
import type { ProviderResult, ProviderSend } from '../messaging/index.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';

/**
 * How long an idempotent send may stay in flight before its claim counts as abandoned: the three
 * waits the provider timeout bounds (connecting, the answer's headers, its body) and a minute for
 * everything else, at least the 5 minutes of any claim. Tied to the timeout so that no setting of
 * it lets a retry take over a send still running.
 */
export const sendClaimExpiryMs = (providerTimeoutMs: number) => 3 * providerTimeoutMs + 60_000;

/**
 * A 502 after which the provider may have accepted the message (it did not answer in time, the
 * connection was lost after the request went out). The idempotency layer keeps this answer under
 * the key, so a retry with the same key is told so instead of sending a second time.
 */
export class SendOutcomeUnknown extends AppError {
  constructor(message: string) {
    super('PROVIDER_UNAVAILABLE', message);
    this.name = 'SendOutcomeUnknown';
  }
}

export type SendFailure = Extract<ProviderResult, { ok: false }>;

/** Why the provider refused, as a sentence the caller can act on. */
export function rejectionSentence(result: SendFailure, send: ProviderSend): string {
  const c = send.content;
  const detail = result.message ? ` (${clip(result.message, 300)})` : '';
  switch (result.code) {
    case 132001:
      return c.kind === 'template'
        ? `The provider rejected the message: template '${clip(c.name, 100)}' does not exist in language '${c.language}' or is not approved.`
        : 'The provider rejected the message: the template does not exist or is not approved.';
    case 132000:
      return `The provider rejected the message: the number of template parameters does not match the template${detail}.`;
    case 131026:
      return `The provider rejected the message: ${send.to} cannot receive it, it is not a user of the messaging app.`;
    case 131047:
      return `The provider rejected the message: more than 24 hours have passed since ${send.to} last wrote to this number; send a template instead.`;
    case 132015:
    case 132016:
      return 'The provider rejected the message: the template is paused or disabled.';
    case 131030:
      return `The provider rejected the message: ${send.to} is not on the allowed list of test recipients.`;
    default:
      break;
  }
  if (result.kind === 'throttled') {
    return `The provider refused the message because a sending rate limit was reached (code ${result.code ?? 'none'}); retry later with backoff.`;
  }
  return `The provider rejected the message${result.code !== null ? ` with code ${result.code}` : ''}${detail}.`;
}

/** The sentence of a send that did not go through, or whose outcome is unknown. */
export function failureSentence(result: SendFailure, send: ProviderSend): string {
  switch (result.kind) {
    case 'rejected':
    case 'throttled':
      return rejectionSentence(result, send);
    case 'unknown':
      return (
        `The messaging provider's answer is missing (${result.message}), so whether it accepted the message is ` +
        `unknown; it was not retried. GET /api/messages/${send.callbackData} ` +
        "shows the message's status once the provider reports on it; send again (with a new Idempotency-Key) only if it never does."
      );
    case 'config':
      return "The messaging provider refused this number's credentials; an administrator must check its access token.";
    default:
      return `The messaging provider could not be reached or failed (${result.message}); the message was not sent and was not retried.`;
  }
}

/** The AppError a caller of the API gets for a send that did not go through. */
export function sendFailureError(result: { readonly failure: SendFailure; readonly sentence: string }): AppError {
  switch (result.failure.kind) {
    case 'rejected':
    case 'throttled':
      return new AppError('PROVIDER_REJECTED', result.sentence);
    case 'unknown':
      return new SendOutcomeUnknown(result.sentence);
    default:
      return new AppError('PROVIDER_UNAVAILABLE', result.sentence);
  }
}
