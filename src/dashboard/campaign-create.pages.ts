import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import { createCampaign, type TemplateParameterLists } from '../campaigns/campaign.service.js';
import type { AppContext } from '../context.js';
import { AppError, isAppError } from '../shared/errors.js';
import { campaignListPage, mayCreateCampaign } from './campaign-list.js';
import { field, html, isHtmx, type PageKit, redirectAfterPost } from './page-kit.js';
import type { Session } from './session.service.js';
import { renderPartial } from './views.js';

interface CampaignValues {
  name: string;
  agent: string;
  template: string;
  language: string;
  body: string;
  header: string;
}
const emptyValues: CampaignValues = { name: '', agent: '', template: '', language: 'en_US', body: '', header: '' };

/** A textarea of parameters, one per line (blank lines dropped); undefined when empty. */
function lines(text: string): string[] | undefined {
  const list = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return list.length > 0 ? list : undefined;
}

/** A service's sentence without the command line's flags, starting with a capital and ending with a stop. */
function sentence(message: string): string {
  const text = message.replace(/ \(--\w+\)/g, '');
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

export async function createCampaignDialog(
  ctx: Pick<AppContext, 'db'>,
  session: Session,
  values: CampaignValues = emptyValues,
  open = true,
  error?: string,
): Promise<string> {
  return renderPartial('campaign-create-dialog', {
    csrfToken: session.csrfToken,
    agents: await listAgents(ctx.db, session.org.id),
    values,
    open,
    error,
  });
}

/**
 * Creating a campaign (what `parley campaign create` does): a dialog over the campaigns list, for
 * owners and admins of an organization on the paid plan; refused input is explained in the dialog.
 */
export function registerCampaignCreatePages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const mustCreate = (session: Session) => {
    kit.mustManage(session);
    if (!mayCreateCampaign(session)) {
      throw new AppError('FORBIDDEN', 'Campaigns come with the paid plan: an owner upgrades on the API Keys page.');
    }
  };

  app.get('/dashboard/campaigns/new', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    mustCreate(session);
    if (!isHtmx(request)) return reply.redirect('/dashboard/campaigns?create=1', 303);
    return html(reply, await createCampaignDialog(ctx, session, emptyValues, false));
  });
  app.post('/dashboard/campaigns', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    mustCreate(session);
    const values: CampaignValues = {
      name: field(request.body, 'name'),
      agent: field(request.body, 'agent'),
      template: field(request.body, 'template').trim(),
      language: field(request.body, 'language').trim(),
      body: field(request.body, 'body'),
      header: field(request.body, 'header'),
    };
    const htmx = isHtmx(request);
    let id: string;
    try {
      const body = lines(values.body);
      const header = lines(values.header);
      const parameters: TemplateParameterLists | undefined =
        body || header ? { ...(body ? { body } : {}), ...(header ? { header } : {}) } : undefined;
      const created = await createCampaign(db, clock, {
        orgId: session.org.id,
        name: values.name,
        agentId: values.agent,
        template: values.template,
        language: values.language,
        actor: session.user.email,
        ...(parameters ? { parameters } : {}),
      });
      id = created.id;
    } catch (err) {
      if (!isAppError(err) || (err.code !== 'INVALID_BODY' && err.code !== 'NOT_FOUND')) throw err;
      const message = err.code === 'NOT_FOUND' ? 'Choose one of your agents.' : sentence(err.message);
      const dialog = await createCampaignDialog(ctx, session, values, !htmx, message);
      // htmx swaps only successful answers by default, so the dialog with its explanation is a 200 there.
      return htmx ? html(reply, dialog) : html(reply, await campaignListPage(ctx, session, { dialog }), 400);
    }
    return redirectAfterPost(request, reply, `/dashboard/campaigns/${encodeURIComponent(id)}`);
  });
}
