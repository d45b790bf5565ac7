import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/index.js';
import { isWindowOpen } from '../messaging/index.js';
import { judgeTemplateSend, policyRefusal, type TemplatePolicyDeps } from '../policies/index.js';
import type { SendRateLimiter } from '../rate-limit/index.js';
import { AppError } from '../shared/errors.js';
import { windowKey } from '../shared/phone.js';
import type { ChannelSendBody } from './channel.schemas.js';
import { checkBody } from './channel.service.js';
import { closedWindowSentence, noNumberSentence, unknownAgentSentence } from './send-sentences.js';
import { type SenderDeps, senderOf } from './sender.js';

/** The rules a send is judged by, in the order it meets them. */
export const CHECK_RULES = ['agent', 'number', 'window', 'template', 'parameters', 'consent', 'rate_limit'] as const;
export type CheckRule = (typeof CHECK_RULES)[number];

export interface SendCheck {
  readonly rule: CheckRule;
  readonly ok: boolean;
  /** Why not (the sentence the send would have answered), or a note on an `ok`. */
  readonly reason?: string;
}

export type SendCheckDeps = SenderDeps &
  TemplatePolicyDeps & {
    readonly clock: { now(): number };
    readonly sendRateLimiter: Pick<SendRateLimiter, 'peek' | 'windowSeconds'>;
  };

const notChecked = (rule: CheckRule, why: string): SendCheck => ({ rule, ok: false, reason: `Not checked: ${why}.` });

/**
 * POST /api/channels/send/check: what a send of this body would meet, rule by rule, sending
 * nothing and counting nothing against the rate limits. The body, the key and the agent it may
 * name are checked as a send checks them (400, 403); each rule then says `ok`, or the sentence the
 * send would have answered.
 */
export async function checkChannelSend(
  ctx: SendCheckDeps,
  principal: Principal,
  body: ChannelSendBody,
): Promise<{ success: true; wouldSend: boolean; checks: SendCheck[] }> {
  const { to, content } = checkBody(body);
  const agentId = targetAgentId(principal, body.convId);
  if (agentId === undefined) {
    throw new AppError(
      'INVALID_BODY',
      "'convId' is required with an organization key: name the agent whose number sends the message.",
    );
  }
  assertAgentAllowed(principal, agentId);
  const checks: SendCheck[] = [];
  const sender = await senderOf(ctx, principal.orgId, agentId);
  checks.push(
    sender ? { rule: 'agent', ok: true } : { rule: 'agent', ok: false, reason: unknownAgentSentence(agentId) },
  );
  const numberId = sender?.numberId && sender.phoneNumberId ? sender.numberId : undefined;
  if (!sender) checks.push(notChecked('number', 'no such agent'));
  else
    checks.push(
      numberId ? { rule: 'number', ok: true } : { rule: 'number', ok: false, reason: noNumberSentence(agentId) },
    );

  if (content.kind === 'text') {
    if (!numberId) checks.push(notChecked('window', 'no messaging number'));
    else {
      const open = await isWindowOpen(ctx.db, numberId, windowKey(to), ctx.clock.now());
      checks.push(
        open ? { rule: 'window', ok: true } : { rule: 'window', ok: false, reason: closedWindowSentence(to) },
      );
    }
    const free = 'free text is not a template';
    checks.push({ rule: 'template', ok: true, reason: free }, { rule: 'parameters', ok: true, reason: free });
    checks.push({ rule: 'consent', ok: true, reason: 'free text within the window goes whatever the consent' });
  } else {
    checks.push({ rule: 'window', ok: true, reason: 'a template may be sent at any time' });
    if (!numberId) {
      for (const rule of ['template', 'parameters', 'consent'] as const)
        checks.push(notChecked(rule, 'no messaging number'));
    } else {
      const verdict = await judgeTemplateSend(ctx, {
        orgId: principal.orgId,
        numberId,
        to,
        name: content.name,
        language: content.language,
        header: content.header,
        body: content.body,
      });
      const unsynced = "the number's templates were never read from the provider, so the provider decides";
      for (const rule of ['template', 'parameters', 'consent'] as const) {
        const problem = verdict.problems[rule];
        if (problem) checks.push({ rule, ok: false, reason: policyRefusal(rule, problem).message });
        else if (!verdict.synced && rule !== 'consent') checks.push({ rule, ok: true, reason: unsynced });
        else checks.push({ rule, ok: true });
      }
    }
  }

  const limit = await ctx.sendRateLimiter.peek({ keyId: principal.keyId, orgId: principal.orgId });
  checks.push(
    limit.allowed
      ? { rule: 'rate_limit', ok: true }
      : {
          rule: 'rate_limit',
          ok: false,
          reason: `Rate limit exceeded: ${limit.name === 'key' ? 'this API key' : 'this organization'} may make ${limit.quota} requests per ${ctx.sendRateLimiter.windowSeconds} seconds; retry after ${limit.retryAfterSeconds} seconds.`,
        },
  );
  return { success: true, wouldSend: checks.every((c) => c.ok), checks };
}
