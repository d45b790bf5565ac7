import { registerCampaignCommands } from './commands/campaigns.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerEndpointCommands } from './commands/endpoints.js';
import { registerEndUserCommands } from './commands/endusers.js';
import { registerJobCommands } from './commands/jobs.js';
import { registerNumberCommands } from './commands/numbers.js';
import { registerPlatformCommands } from './commands/platform.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { registerServeCommand } from './commands/serve.js';
import { registerTriggerCommands } from './commands/triggers.js';
import { registerUserCommands } from './commands/users.js';
import { registerWebhookCommands } from './commands/webhooks.js';
import { addExamples, createProgram } from './program.js';

const program = createProgram().exitOverride((err) => {
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
registerTriggerCommands(program);
registerCampaignCommands(program);
registerUserCommands(program);

addExamples(program);
await program.parseAsync(process.argv);
