import type { FastifyInstance } from 'fastify';
import { html, type PageKit } from './page-kit.js';
import { renderPage } from './views.js';

/** Settings (/dashboard/settings) and its Integrations page; API Keys below them is api-keys.pages.ts. */
export function registerSettingsPages(app: FastifyInstance, kit: PageKit): void {
  app.get('/dashboard/settings', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    return html(reply, renderPage('settings', { title: 'Settings', session, section: 'settings' }));
  });
  app.get('/dashboard/settings/integrations', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    return html(reply, renderPage('integrations', { title: 'Integrations', session, section: 'settings' }));
  });
}
