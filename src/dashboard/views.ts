import { Eta } from 'eta';
import { readDashboardFile } from './dashboard-files.js';

/**
 * The dashboard's templates: src/dashboard/templates/<name>.eta, Eta with every `<%= %>`
 * HTML-escaped (`<%~ %>` inserts HTML already rendered: a page's body, a dialog). Read and
 * compiled once, at start-up.
 */
const VIEWS = [
  'layout',
  'login',
  'home',
  'settings',
  'integrations',
  'keys',
  'create-dialog',
  'created-dialog',
  'confirm-dialog',
  'revoke-dialog',
  'remove-campaign-dialog',
  'upgrade-dialog',
  'audit',
  'agents',
  'conversations',
  'thread',
  'campaigns',
  'campaign',
  'campaign-key-dialog',
  'end-users',
  'error',
  // Agents' hooks, people and campaign creation (the dashboard does what the CLI does).
  'agent',
  'agent-number',
  'opt-out',
  'hook-warning',
  'hook-create-dialog',
  'hook-created-dialog',
  'hook-delete-dialog',
  'people',
  'invite-dialog',
  'invited-dialog',
  'remove-person-dialog',
  'invitation',
  'campaign-create-dialog',
  'pager',
  // The inbox (people in the loop).
  'waiting-count',
  'inbox',
  'inbox-list',
  'inbox-conversation',
  'inbox-thread',
  'inbox-panel',
  'inbox-composer',
  'inbox-template-fields',
  'inbox-note-form',
  // Segments, schedules and analytics.
  'segments',
  'segment',
  'segment-count',
  'campaign-sends',
  'campaign-sends-table',
  'sending-rules',
  'bar-chart',
  'row-chart',
  'overview',
  'campaign-analytics',
] as const;

export type ViewName = (typeof VIEWS)[number];

/** A template file's text; the newline that ends the file is not part of the template. */
const templateText = (name: ViewName) =>
  readDashboardFile('templates', `${name}.eta`).toString('utf8').replace(/\n$/, '');

const eta = new Eta({ autoEscape: true, autoTrim: false, cache: true });
for (const name of VIEWS) eta.loadTemplate(`@${name}`, templateText(name));

/** One template alone (a dialog answering htmx, say). */
export function renderPartial(name: ViewName, data: object): string {
  return eta.render(`@${name}`, data);
}

/** A whole page: the template inside the layout, with an optional dialog already open. */
export interface PageData {
  title: string;
  session?: unknown;
  section?: string;
  [name: string]: unknown;
}

export function renderPage(name: ViewName, data: PageData, dialog?: string): string {
  return eta.render('@layout', { ...data, body: renderPartial(name, data), dialog });
}
