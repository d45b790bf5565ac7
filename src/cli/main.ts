import { Command } from 'commander';
import { registerDemoCommand } from './commands/demo.js';
import { registerEndpointCommands } from './commands/endpoints.js';
import { registerEndUserCommands } from './commands/endusers.js';
import { registerJobCommands } from './commands/jobs.js';
import { registerNumberCommands } from './commands/numbers.js';
import { registerPlatformCommands } from './commands/platform.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { registerServeCommand } from './commands/serve.js';
import { registerWebhookCommands } from './commands/webhooks.js';

const program = new Command('parley')
  .description('Parley: messaging and end-user API for conversational agents')
  .showHelpAfterError()
  .exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

registerServeCommand(program);
registerPlatformCommands(program);
registerDemoCommand(program);
registerEndUserCommands(program);
registerNumberCommands(program);
registerSandboxCommands(program);
registerWebhookCommands(program);
registerJobCommands(program);
registerEndpointCommands(program);

await program.parseAsync(process.argv);
