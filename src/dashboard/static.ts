import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { readDashboardFile } from './dashboard-files.js';

/**
 * Everything the pages load, served by Parley itself (no CDN; works offline): htmx and Pico.css
 * from their npm packages; the dashboard's own few rules and behaviours, assets/dashboard.css and
 * assets/dashboard.js (dialogs: modal with keyboard focus kept inside; Escape on the new-key dialog
 * asks first; Copy); and Parley's mark, assets/parley.svg. The dashboard's own files are read at
 * start-up, the packages' on first use.
 */
interface Asset {
  readonly type: string;
  body: Buffer | undefined;
  readonly load: () => Buffer;
}

const require = createRequire(import.meta.url);
const fromPackage = (specifier: string) => () => readFileSync(require.resolve(specifier));
const DASHBOARD_CSS = readDashboardFile('assets', 'dashboard.css');
const DASHBOARD_JS = readDashboardFile('assets', 'dashboard.js');
const LOGO = readDashboardFile('assets', 'parley.svg');

const ASSETS: Record<string, Asset> = {
  'htmx.min.js': {
    type: 'text/javascript; charset=utf-8',
    body: undefined,
    load: fromPackage('htmx.org/dist/htmx.min.js'),
  },
  // htmx's extension for server-sent events: the inbox's live updates (inbox-stream.ts).
  'htmx-ext-sse.js': {
    type: 'text/javascript; charset=utf-8',
    body: undefined,
    load: fromPackage('htmx-ext-sse/dist/sse.min.js'),
  },
  'pico.classless.min.css': {
    type: 'text/css; charset=utf-8',
    body: undefined,
    load: fromPackage('@picocss/pico/css/pico.classless.min.css'),
  },
  'dashboard.css': { type: 'text/css; charset=utf-8', body: DASHBOARD_CSS, load: () => DASHBOARD_CSS },
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: DASHBOARD_JS, load: () => DASHBOARD_JS },
  // Parley's mark: the pages' logo and favicon, and the API reference's.
  'parley.svg': { type: 'image/svg+xml', body: LOGO, load: () => LOGO },
};

/** A static file by name (read once), or undefined. */
export function staticAsset(name: string): { type: string; body: Buffer } | undefined {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return undefined;
  asset.body ??= asset.load();
  return { type: asset.type, body: asset.body };
}
