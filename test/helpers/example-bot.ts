import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import type { MessagingTestApp } from './messaging.js';
import { closedPort } from './messaging.js';
import { until } from './wait.js';

/**
 * Runs one of examples/ as a user would: its agent's hook points at a free port, the example is
 * started with the documented environment (PARLEY_URL, PARLEY_KEY, WEBHOOK_SECRET, PORT), and this
 * resolves once it prints `listening` (its own words for being up). `stop()` ends it.
 */
export async function startExampleBot(
  t: MessagingTestApp,
  tenant: { org: { id: string }; agent: { id: string }; agentKey: { key: string } },
  file: string,
  listening: string,
): Promise<{ bot: ChildProcess; stop(): void }> {
  const port = await closedPort();
  const hook = await createEndpoint(t.ctx, {
    orgId: tenant.org.id,
    url: `http://127.0.0.1:${port}/`,
    agentId: tenant.agent.id,
  });
  const bot = spawn(process.execPath, [fileURLToPath(new URL(`../../examples/${file}`, import.meta.url))], {
    env: {
      ...process.env,
      PARLEY_URL: t.url,
      PARLEY_KEY: tenant.agentKey.key,
      WEBHOOK_SECRET: hook.secret,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  bot.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  try {
    await until(() => out.includes(listening), `${file} to listen`);
  } catch (err) {
    bot.kill();
    throw err;
  }
  return { bot, stop: () => bot.kill() };
}
