import type { FastifyInstance } from 'fastify';
import { type AuditEntry, listAudit } from '../audit/audit.service.js';
import type { AppContext } from '../context.js';
import { listKeys } from '../keys/key.service.js';
import { formatTime, html, type PageKit } from './page-kit.js';
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

/** The audit log (/dashboard/audit): the organization's changes, newest first, in words. */
export function registerAuditPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db } = ctx;
  app.get('/dashboard/audit', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const keys = await listKeys(db, session.org.id);
    const keyNames = new Map(keys.map((k) => [k.id, `${k.label} (${k.prefix})`]));
    const entries = (await listAudit(db, session.org.id, { limit: 500 })).map((e) => auditRow(e, keyNames));
    return html(
      reply,
      renderPage('audit', { title: 'Audit log', session, section: 'audit', org: session.org, entries }),
    );
  });
}
