import { namesOf } from './read.js';
import { SECTIONS, type SettingName } from './settings.js';
import type { Setting } from './values.js';

/** The page's default column: `shown` if given, else the value (`unset` when there is none), then the note. */
function shownDefault(setting: Setting): string {
  const value = setting.default;
  const shown =
    setting.shown ??
    (value === undefined
      ? 'unset'
      : Array.isArray(value)
        ? value.length === 0
          ? 'none'
          : `\`${value.join(',')}\``
        : `\`${String(value)}\``);
  return setting.note ? `${shown} (${setting.note})` : shown;
}

/** docs/configuration.md, made from the one list of settings (src/config/settings.ts). */
export function configurationPage(): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated from src/config/settings.ts by `node --import tsx scripts/config-docs.ts`; edit that list, not this page. -->',
    '',
    'Parley reads its settings once at start-up from the environment (flags of `parley serve` win) into a',
    'frozen object. A bad value stops start-up with one line naming the variable, e.g. `port must be a',
    'positive integer, got "abc"`. Times are in milliseconds unless the name says otherwise.',
    '',
    '`npm start` and `npx parley` run Node with `--max-semi-space-size=8` (the first line of `cli/parley.js`):',
    "a smaller young generation than V8's default keeps the server's resident memory lower under load at no",
    'measured cost in throughput ([bench/README.md](../bench/README.md)); `node dist/cli/main.js` leaves the default.',
    '',
  ];
  for (const { title, settings } of SECTIONS) {
    out.push(`## ${title}`, '', '| variable | default | meaning |', '| - | - | - |');
    for (const [name, setting] of Object.entries(settings) as [SettingName, Setting][]) {
      const names = namesOf(name)
        .map((n) => `\`${n}\``)
        .join(', ');
      out.push(`| ${names} | ${shownDefault(setting)} | ${setting.doc} |`);
    }
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
