import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import {
  getSendingRules,
  MAX_MARKETING_CAP,
  type SendingRules,
  updateSendingRules,
} from '../sending-rules/sending-rules.service.js';
import { isAppError } from '../shared/errors.js';
import { field, html, type PageKit, redirectAfterPost } from './page-kit.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPage } from './views.js';

/** Settings → Sending rules (/dashboard/settings/sending): quiet hours and the marketing cap, as `parley org update` sets them. */
export function registerSendingRulePages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const PATH = '/dashboard/settings/sending';

  const page = (
    session: Session,
    rules: SendingRules,
    values: { quietHours: string; timeZone: string; marketingCap: string },
    extra: { error?: string; saved?: boolean } = {},
  ) =>
    renderPage('sending-rules', {
      title: 'Sending rules',
      session,
      section: 'settings',
      csrfToken: session.csrfToken,
      canManage: canManage(session.user.role),
      rules,
      values,
      maxCap: MAX_MARKETING_CAP,
      ...extra,
    });

  const valuesOf = (rules: SendingRules) => ({
    quietHours: rules.quietHours ? `${rules.quietHours.start}-${rules.quietHours.end}` : '',
    timeZone: rules.quietHours?.timeZone ?? '',
    marketingCap: rules.marketingCap === null ? '' : String(rules.marketingCap),
  });

  app.get(PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const rules = await getSendingRules(db, session.org.id);
    const saved = (request.query as { saved?: string }).saved !== undefined;
    return html(reply, page(session, rules, valuesOf(rules), { saved }));
  });

  app.post(PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const values = {
      quietHours: field(request.body, 'quietHours').trim(),
      timeZone: field(request.body, 'timeZone').trim(),
      marketingCap: field(request.body, 'marketingCap').trim(),
    };
    try {
      if (values.marketingCap !== '' && !/^\d+$/.test(values.marketingCap)) {
        throw Object.assign(new Error('The marketing cap must be a whole number (empty: no cap).'), { shown: true });
      }
      await updateSendingRules(db, clock, session.org.id, {
        quietHours: values.quietHours === '' ? null : values.quietHours,
        ...(values.timeZone !== '' ? { timeZone: values.timeZone } : {}),
        marketingCap: values.marketingCap === '' ? null : Number(values.marketingCap),
      });
    } catch (err) {
      const shown = (err as { shown?: boolean }).shown === true;
      if (!shown && !(isAppError(err) && err.code === 'INVALID_BODY')) throw err;
      const rules = await getSendingRules(db, session.org.id);
      return html(reply, page(session, rules, values, { error: (err as Error).message }), 400);
    }
    return redirectAfterPost(request, reply, `${PATH}?saved=1`);
  });
}
