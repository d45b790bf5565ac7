import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { getConsentRules, updateConsentRules } from '../policies/consent-rules.service.js';
import { isAppError } from '../shared/errors.js';
import { field, html, type PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { renderPage } from './views.js';

export const OPT_OUT_PATH = '/dashboard/settings/opt-out';

/**
 * Opt-out (/dashboard/settings/opt-out): the words that opt an end user out of the organization's
 * marketing templates and back in, and the reply sent at once; owners and admins change them.
 */
export function registerOptOutPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const page = async (session: Session, form?: { values: Record<string, string>; error: string }) => {
    const rules = await getConsentRules(ctx.db, session.org.id);
    return renderPage('opt-out', {
      title: 'Opt-out',
      session,
      section: 'settings',
      csrfToken: session.csrfToken,
      canManage: session.user.role !== 'member',
      strict: ctx.config.policies.optOutStrict,
      error: form?.error,
      values: form?.values ?? {
        optOutKeywords: rules.optOutKeywords.join(', '),
        optInKeywords: rules.optInKeywords.join(', '),
        optOutReply: rules.optOutReply ?? '',
      },
    });
  };
  app.get(OPT_OUT_PATH, kit.signedIn, async (request, reply) => html(reply, await page(kit.sessionOf(request))));
  app.post(OPT_OUT_PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const values = {
      optOutKeywords: field(request.body, 'optOutKeywords'),
      optInKeywords: field(request.body, 'optInKeywords'),
      optOutReply: field(request.body, 'optOutReply'),
    };
    try {
      await updateConsentRules(ctx.db, ctx.clock, session.org.id, values);
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      return html(reply, await page(session, { values, error: `Not saved: ${err.message}.` }), 400);
    }
    return reply.redirect(`${OPT_OUT_PATH}?saved=1`, 303);
  });
}
