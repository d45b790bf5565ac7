import type { FastifyInstance } from 'fastify';
import { type AuditEntry, pageOfAudit } from '../audit/audit.service.js';
import type { AppContext } from '../context.js';
import { findKeys } from '../keys/key.service.js';
import { formatTime, html, type PageKit } from './page-kit.js';
import { PAGE_SIZE, pageRequestOf, pagerOf } from './pager.js';
import { renderPage } from './views.js';

const AUDIT_WORDS: Record<string, string> = {
  'key.created': 'Created API key',
  'key.revoked': 'Revoked API key',
  'plan.changed': 'Changed the plan',
  'endpoint.created': 'Created endpoint',
  'endpoint.deleted': 'Deleted endpoint',
  'endpoint.disabled': 'Disabled endpoint',
  'endpoint.enabled': 'Enabled endpoint',
  'endpoint.delivery_resent': 'Resent a delivery',
  'user.invited': 'Invited person',
  'user.invitation_withdrawn': 'Withdrew invitation',
  'user.created': 'Added person',
  'user.removed': 'Removed person',
  'user.password_changed': 'Changed password',
  'campaign.created': 'Created campaign',
  'campaign.removed': 'Removed campaign',
  'campaign.paused': 'Paused campaign',
  'campaign.resumed': 'Resumed campaign',
};

function auditRow(entry: AuditEntry, keyNames: Map<string, string>) {
  const d = entry.details ?? {};
  const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
  let target = `${entry.targetType} ${entry.targetId}`;
  if (entry.targetType === 'api_key') {
    target = keyNames.get(entry.targetId) ?? (d.label ? `${text(d.label)} (${text(d.prefix)})` : entry.targetId);
  } else if (entry.targetType === 'user') target = text(d.email) || entry.targetId;
  else if (entry.targetType === 'endpoint') target = text(d.url) || entry.targetId;
  else if (entry.action === 'plan.changed') target = `${text(d.from)} → ${text(d.to)}`;
  return {
    when: formatTime(entry.at),
    actor: entry.actor === 'cli' ? 'Command line (cli)' : entry.actor,
    what: AUDIT_WORDS[entry.action] ?? entry.action,
    target,
  };
}

/** The audit log (/dashboard/audit): the organization's changes, newest first, in words, a page at a time. */
export function registerAuditPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;
  app.get('/dashboard/audit', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const page = await pageOfAudit(
      db,
      session.org.id,
      pageRequestOf(request.query as Record<string, string | undefined>),
    );
    // The names of the page's keys only, in one lookup.
    const keyIds = page.data.filter((e) => e.targetType === 'api_key').map((e) => e.targetId);
    const keys = await findKeys(db, session.org.id, keyIds);
    const keyNames = new Map(keys.map((k) => [k.id, `${k.label} (${k.prefix})`]));
    return html(
      reply,
      renderPage('audit', {
        title: 'Audit log',
        session,
        section: 'audit',
        org: session.org,
        entries: page.data.map((e) => auditRow(e, keyNames)),
        pageSize: PAGE_SIZE,
        pager: pagerOf('/dashboard/audit', {}, page),
      }),
    );
  });
}
