import { type Command, Help } from 'commander';
import { addExamples } from './program.js';

/**
 * A file of commands: the top-level commands it registers, as `parley --help` lists them (the
 * term and the one-line description), and how to load it. A command file imports what its
 * actions need (the database, services, a server): loaded all at once they cost a second or two
 * of CPU at every start, so `parley <command>` loads only the file that registers <command>, and
 * `parley --help` loads none.
 */
export interface CommandFile {
  readonly commands: Readonly<Record<string, { readonly term: string; readonly summary: string }>>;
  readonly load: () => Promise<(program: Command) => void>;
}

const one = (term: string, summary: string) => ({ term, summary });

/** Every command file, in the order `parley --help` lists their commands. */
export const COMMAND_FILES: readonly CommandFile[] = [
  {
    commands: { serve: one('serve [options]', 'run the API server for one region, or several on consecutive ports') },
    load: async () => (await import('./commands/serve.js')).registerServeCommand,
  },
  {
    commands: {
      migrate: one('migrate [options]', 'bring the region database up to date'),
      org: one('org', 'organizations'),
      agent: one('agent', 'AI agents'),
      key: one('key', 'API keys'),
    },
    load: async () => (await import('./commands/platform.js')).registerPlatformCommands,
  },
  {
    commands: {
      demo: one(
        'demo [options]',
        'create a paid demo organization with agents, keys of each kind and a dashboard owner',
      ),
    },
    load: async () => {
      // The files whose demo steps enrich the demo (numbers: each agent gets a sandbox number).
      await import('./commands/numbers.js');
      return (await import('./commands/demo.js')).registerDemoCommand;
    },
  },
  {
    commands: { endusers: one('endusers', 'end-user records') },
    load: async () => (await import('./commands/endusers.js')).registerEndUserCommands,
  },
  {
    commands: { number: one('number', 'messaging numbers of an organization') },
    load: async () => (await import('./commands/numbers.js')).registerNumberCommands,
  },
  {
    commands: { template: one('template', "templates of an organization's numbers") },
    load: async () => (await import('./commands/templates.js')).registerTemplateCommands,
  },
  {
    commands: {
      sandbox: one(
        'sandbox [options]',
        'run the messaging provider sandbox alone (parley serve starts one itself when no provider is set)',
      ),
    },
    load: async () => (await import('./commands/sandbox.js')).registerSandboxCommands,
  },
  {
    commands: { webhooks: one('webhooks', 'provider webhooks kept because they could not be applied') },
    load: async () => (await import('./commands/webhooks.js')).registerWebhookCommands,
  },
  {
    commands: { jobs: one('jobs', 'background jobs (provider webhooks, event deliveries)') },
    load: async () => (await import('./commands/jobs.js')).registerJobCommands,
  },
  {
    commands: { endpoint: one('endpoint', 'event webhook endpoints (an agent’s hook, integrations)') },
    load: async () => (await import('./commands/endpoints.js')).registerEndpointCommands,
  },
  {
    commands: { trigger: one('trigger', "an agent's entry points (POST /api/triggers/...)") },
    load: async () => (await import('./commands/triggers.js')).registerTriggerCommands,
  },
  {
    commands: {
      campaign: one('campaign', 'webhook campaigns (POST /api/campaigns/<id>/webhook with the campaign key)'),
    },
    load: async () => (await import('./commands/campaigns.js')).registerCampaignCommands,
  },
  {
    commands: {
      user: one('user', 'people who sign in to the dashboard'),
      audit: one('audit', 'the audit log'),
    },
    load: async () => (await import('./commands/users.js')).registerUserCommands,
  },
];

const ROOT_OPTIONS = new Set(['-h', '--help', '-V', '--version']);

/**
 * The command files `args` (the arguments after `parley`) needs: none when the program itself
 * answers (its help or version, or no command), the one that registers the command named, and
 * every file otherwise (an unknown command, whose error suggests the nearest known one).
 */
export function filesFor(args: readonly string[], files: readonly CommandFile[] = COMMAND_FILES): CommandFile[] {
  const [first, second] = args;
  const named = first === 'help' ? second : first;
  if (named === undefined || (first !== undefined && ROOT_OPTIONS.has(first))) return [];
  const file = files.find((f) => Object.hasOwn(f.commands, named));
  return file ? [file] : [...files];
}

/**
 * Registers on `program` the command files `args` needs, and lists every other command by its
 * name and description alone (enough for the program's own help); then the examples.
 */
export async function registerCommands(
  program: Command,
  args: readonly string[],
  files: readonly CommandFile[] = COMMAND_FILES,
): Promise<void> {
  const needed = filesFor(args, files);
  const terms = new Map<Command, string>();
  for (const file of files) {
    if (needed.includes(file)) (await file.load())(program);
    else {
      for (const [name, { term, summary }] of Object.entries(file.commands))
        terms.set(program.command(name).description(summary), term);
    }
  }
  if (terms.size > 0) {
    // A listed command has no options of its own to show as `[options]`: its term is given.
    program.configureHelp({
      ...program.configureHelp(),
      subcommandTerm(cmd: Command) {
        return terms.get(cmd) ?? Help.prototype.subcommandTerm.call(this, cmd);
      },
    });
  }
  addExamples(program);
}
