import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Everything the pages load, served by Parley itself (no CDN; works offline): htmx and Pico.css
 * from their npm packages, and the dashboard's own few rules and behaviours below.
 */
const DASHBOARD_CSS = `
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.error { color: #b3261e; font-weight: 600; }
form.inline { margin: 0; }
form.inline button { margin: 0; padding: 0.3rem 0.8rem; width: auto; }
.actions { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin-bottom: 1rem; }
.actions > * { margin: 0; }
/* Buttons beside an inline form or in a table row are as compact as it is (wide tables keep to the page). */
.actions a[role="button"], td a[role="button"] { margin: 0; padding: 0.3rem 0.8rem; white-space: nowrap; }
/* Half of Pico's side padding: the nine columns of the keys table fit 1,280 pixels. */
th, td { padding-inline: 0.5rem; }
/* A time ("2026-11-25 03:39 UTC") may wrap before its hour, never inside its date. */
td.when { min-width: 11ch; }
.who { font-size: 0.9rem; }
nav[aria-label="Breadcrumb"] ul li:not(:last-child)::after { content: " ›"; padding-left: 0.3rem; }
/* A dialog's Cancel and confirming button side by side at the right, each as tall and as wide as its label. */
dialog footer { display: flex; gap: 1rem; justify-content: flex-end; align-items: center; }
dialog footer > :is([role="button"], [type="submit"]) { margin: 0; width: auto; }
/* Pico's classless build has no .secondary: the buttons marked so (Cancel, Sign out, Revoke in a row) in its secondary colours. */
:is(button, [role="button"]).secondary { --pico-background-color: var(--pico-secondary-background); --pico-border-color: var(--pico-secondary-border); --pico-color: var(--pico-secondary-inverse); }
:is(button, [role="button"]).secondary:is(:hover, :active, :focus) { --pico-background-color: var(--pico-secondary-hover-background); --pico-border-color: var(--pico-secondary-hover-border); }
/* Agent only for an agent key; End-users only for an organization key (works without JavaScript). */
form.create-key:has(#key-scope option[value="organization"]:checked) .agent-field { display: none; }
form.create-key:has(#key-scope option[value="agent"]:checked) .endusers-field { display: none; }
details.close-confirm[open] summary { display: none; }
`;

/** Dialogs: modal with keyboard focus kept inside; Escape on the new-key dialog asks first; Copy. */
const DASHBOARD_JS = `
(function () {
  function openDialogs(root) {
    root.querySelectorAll('dialog[data-modal]').forEach(function (d) {
      if (d.open) d.close();
      if (!d.isConnected) return;
      d.showModal();
      var focus = d.querySelector('[autofocus]') || d.querySelector('input:not([type=hidden]), select, button, a[href]');
      if (focus) focus.focus();
      d.addEventListener('cancel', function (event) {
        if (d.hasAttribute('data-confirm-close')) {
          event.preventDefault();
          var confirm = d.querySelector('details.close-confirm');
          if (confirm) { confirm.open = true; var yes = confirm.querySelector('a'); if (yes) yes.focus(); }
        }
      });
      d.addEventListener('close', function () { if (!d.hasAttribute('data-confirm-close')) d.remove(); });
    });
  }
  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var close = target.closest('[data-close]');
    if (close) {
      var dialog = close.closest('dialog');
      if (dialog) { event.preventDefault(); dialog.close(); }
      return;
    }
    var copy = target.closest('[data-copy]');
    if (copy) {
      var input = document.querySelector(copy.getAttribute('data-copy'));
      var note = copy.parentElement && copy.parentElement.querySelector('.copied');
      if (!input) return;
      input.select();
      var done = function () { if (note) note.textContent = 'Copied.'; };
      if (navigator.clipboard) navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand('copy'); done(); });
      else { document.execCommand('copy'); done(); }
    }
  });
  document.addEventListener('change', function (event) {
    var scope = event.target;
    if (!(scope instanceof HTMLSelectElement) || scope.id !== 'key-scope') return;
    if (scope.value === 'agent') {
      var endusers = scope.form && scope.form.querySelector('input[value="endusers"]');
      if (endusers) endusers.checked = false;
    }
  });
  document.addEventListener('DOMContentLoaded', function () { openDialogs(document); });
  document.addEventListener('htmx:afterSwap', function (event) { openDialogs(event.target); });
})();
`;

interface Asset {
  readonly type: string;
  body: Buffer | undefined;
  readonly load: () => Buffer;
}

const require = createRequire(import.meta.url);
const fromPackage = (specifier: string) => () => readFileSync(require.resolve(specifier));

const ASSETS: Record<string, Asset> = {
  'htmx.min.js': {
    type: 'text/javascript; charset=utf-8',
    body: undefined,
    load: fromPackage('htmx.org/dist/htmx.min.js'),
  },
  'pico.classless.min.css': {
    type: 'text/css; charset=utf-8',
    body: undefined,
    load: fromPackage('@picocss/pico/css/pico.classless.min.css'),
  },
  'dashboard.css': { type: 'text/css; charset=utf-8', body: undefined, load: () => Buffer.from(DASHBOARD_CSS) },
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: undefined, load: () => Buffer.from(DASHBOARD_JS) },
};

/** A static file by name (read once), or undefined. */
export function staticAsset(name: string): { type: string; body: Buffer } | undefined {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return undefined;
  asset.body ??= asset.load();
  return { type: asset.type, body: asset.body };
}
