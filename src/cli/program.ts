import { readFileSync } from 'node:fs';
import { Command, type Option } from 'commander';

/** The software's own version (package.json), which `parley --version` prints; the API description stays 3.0.0. */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * A command that reports every missing required option at once (commander stops at the first),
 * and whose subcommands are of the same kind.
 */
class ParleyCommand extends Command {
  override createCommand(name?: string): ParleyCommand {
    return new ParleyCommand(name);
  }

  /** Called by commander for the first missing required option: name them all. */
  missingMandatoryOptionValue(option: Option): void {
    const missing = this.options.filter((o) => o.mandatory && this.getOptionValue(o.attributeName()) === undefined);
    const flags = (missing.length > 0 ? missing : [option]).map((o) => o.flags);
    this.error(
      `error: required option${flags.length > 1 ? 's' : ''} not specified: ${flags.join(', ')} (see ${this.commandPath()} --help)`,
      { code: 'commander.missingMandatoryOptionValue' },
    );
  }

  private commandPath(): string {
    const names: string[] = [];
    for (let c: Command | null = this; c; c = c.parent) names.unshift(c.name());
    return names.join(' ');
  }
}

/** One example per command, shown at the end of its help. */
const EXAMPLES: Record<string, string> = {
  serve: 'parley serve --region us --port 3000',
  migrate: 'parley migrate --json',
  demo: 'parley demo --region us',
  'org create': 'parley org create --name "Acme" --plan paid --country US --json',
  'org list': 'parley org list',
  'org plan': 'parley org plan --org org_... --plan paid',
  'org country': 'parley org country --org org_... --country GB',
  'org update': 'parley org update --org org_... --quiet-hours 21:00-08:00 --time-zone Europe/Lisbon --marketing-cap 2',
  'agent create': 'parley agent create --org org_... --name Support --number +14155550123 --json',
  'agent list': 'parley agent list --org org_...',
  'key create':
    'parley key create --org org_... --label bot --scope agent --agent agt_... --permissions channels,triggers --json',
  'key list': 'parley key list --org org_...',
  'key revoke': 'parley key revoke --org org_... --id key_...',
  'number add': 'parley number add --org org_... --phone +14155550123',
  'number list': 'parley number list --org org_...',
  'number assign': 'parley number assign --org org_... --agent agt_... --phone +14155550123',
  sandbox: 'parley sandbox --port 3900',
  'sandbox inbound': 'parley sandbox inbound --agent agt_... --from +14155550100 --text "Hi"',
  'webhooks failed': 'parley webhooks failed --json',
  'webhooks retry': 'parley webhooks retry --id <id>',
  'endusers import': 'parley endusers import people.csv --org org_... --origin imported',
  'jobs list': 'parley jobs list',
  'jobs dead': 'parley jobs dead --queue event-delivery',
  'jobs replay': 'parley jobs replay --id <id>',
  'endpoint create': 'parley endpoint create --org org_... --url https://bot.example.com/hook --agent agt_... --json',
  'endpoint list': 'parley endpoint list --org org_...',
  'endpoint delete': 'parley endpoint delete --id ep_...',
  'endpoint rotate-secret': 'parley endpoint rotate-secret --id ep_...',
  'endpoint enable': 'parley endpoint enable --id ep_...',
  'endpoint deliveries': 'parley endpoint deliveries --id ep_... --failed',
  'endpoint replay': 'parley endpoint replay --delivery dlv_...',
  'trigger create':
    'parley trigger create --org org_... --agent agt_... --name "Order shipped" --template order_update --language en_US --id order_shipped --json',
  'trigger list': 'parley trigger list --org org_... --agent agt_...',
  'trigger enable': 'parley trigger enable --org org_... --agent agt_... --id order_shipped',
  'trigger disable': 'parley trigger disable --org org_... --agent agt_... --id order_shipped',
  'campaign create':
    'parley campaign create --org org_... --name "Spring sale" --agent agt_... --template spring_sale --language en_US --json',
  'campaign list': 'parley campaign list --org org_...',
  'campaign show': 'parley campaign show --org org_... --id cmp_...',
  'campaign pause': 'parley campaign pause --org org_... --id cmp_...',
  'campaign resume': 'parley campaign resume --org org_... --id cmp_...',
  'campaign remove': 'parley campaign remove --org org_... --id cmp_... --json',
  'campaign send': 'parley campaign send --org org_... --id cmp_... --segment seg_... --at 2026-12-24T10:00:00Z',
  'campaign export': 'parley campaign export --org org_... --id cmp_... > deliveries.csv',
  'campaign send-show': 'parley campaign send-show --org org_... --id cmp_... --send snd_... --json',
  'user create': 'parley user create --org org_... --email ada@example.com --role owner --password-stdin',
  'user list': 'parley user list --org org_...',
  'user remove': 'parley user remove --org org_... --email ada@example.com',
  'user password': 'parley user password --org org_... --email ada@example.com --password-stdin',
  'audit list': 'parley audit list --org org_... --json',
};

/** The `parley` program: version, required options marked in help, every missing one reported. */
export function createProgram(): Command {
  return new ParleyCommand('parley')
    .description('Parley: messaging and end-user API for conversational agents')
    .version(VERSION, '-V, --version', "print Parley's version (the software's; the API description is 3.0.0)")
    .configureHelp({
      optionDescription: (option) => {
        const base = option.description;
        const extras = [
          ...(option.mandatory ? ['required'] : []),
          ...(option.defaultValue !== undefined && !option.negate
            ? [`default: ${JSON.stringify(option.defaultValue)}`]
            : []),
        ];
        return extras.length > 0 ? `${base} (${extras.join('; ')})` : base;
      },
    })
    .showHelpAfterError();
}

/** Adds its example to the help of every command that has one (after every command is registered). */
export function addExamples(program: Command): void {
  const walk = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      const name = [...path, sub.name()];
      const example = EXAMPLES[name.join(' ')];
      if (example) sub.addHelpText('after', `\nExample:\n  $ npx ${example}`);
      walk(sub, name);
    }
  };
  walk(program, []);
}
