import { SECTIONS, SETTINGS, type SettingSection } from './config-reference.js';

/** docs/configuration.md, made from the one list of settings (src/config-reference.ts). */
export function configurationPage(): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated from src/config-reference.ts by `node --import tsx scripts/config-docs.ts`; edit that list, not this page. -->',
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
  for (const [section, title] of Object.entries(SECTIONS) as [SettingSection, string][]) {
    const rows = SETTINGS.filter((s) => s.section === section);
    if (rows.length === 0) continue;
    out.push(`## ${title}`, '', '| variable | default | meaning |', '| - | - | - |');
    for (const s of rows) {
      out.push(`| ${s.names.map((n) => `\`${n}\``).join(', ')} | ${s.default} | ${s.description} |`);
    }
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
