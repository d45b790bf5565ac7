import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import { type ConfigFlags, loadConfig } from '../../config.js';
import { startServer } from '../../server.js';
import { createLogger } from '../../shared/logger.js';
import { action, fail } from '../run.js';

interface ListenError {
  code: string;
  port?: number;
  address?: string;
  hostname?: string;
}

const LISTEN_PROBLEMS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use (--port)',
  EACCES: 'permission denied; ports below 1024 need privileges (--port)',
  EADDRNOTAVAIL: 'this machine has no such address (--host)',
  ENOTFOUND: 'no such host (--host)',
  EAI_AGAIN: 'the host name could not be resolved (--host)',
};

function listenProblem(err: unknown): (ListenError & { problem: string }) | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err) || typeof err.code !== 'string') return undefined;
  const problem = LISTEN_PROBLEMS[err.code];
  return problem ? { ...(err as ListenError), problem } : undefined;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the API server for one region, or several on consecutive ports')
    .option('--region <region>', 'us, eu, in or qa (env PARLEY_REGION; default us)')
    .option('--regions <list>', 'several regions in one process, e.g. us,eu,in,qa on ports N..N+3')
    .option('--port <port>', 'port of the (first) region (env PORT; default 3000)')
    .option('--host <host>', 'address to listen on (env PARLEY_HOST; default 127.0.0.1)')
    .option('--data <dir>', 'data folder of the SQLite databases (env PARLEY_DATA_DIR)')
    .option('--json', 'once every region listens, print one JSON line naming them')
    .action(
      action(async (flags: ConfigFlags & { json?: boolean }) => {
        const { json, ...configFlags } = flags;
        const config = loadConfig(configFlags);
        const logger = createLogger(config);
        const server = await startServer(config, { logger }).catch((err: unknown) => {
          const listen = listenProblem(err);
          if (listen) {
            const host = listen.address ?? listen.hostname ?? config.regions[0]?.host ?? '';
            const port = listen.port ?? config.regions[0]?.port ?? '';
            fail(`cannot listen on ${host}:${port}: ${listen.problem}`);
          }
          throw err;
        });
        closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
          if (err) logger.error({ err }, 'shutting down after an error');
          else logger.info({ signal }, 'shutting down');
          await server.close();
        });
        if (json) {
          process.stdout.write(
            `${JSON.stringify({
              ready: true,
              regions: server.regions.map((r) => ({
                region: r.region.region,
                url: r.url,
                baseUrl: r.region.baseUrl,
                database: r.region.database.kind,
              })),
            })}\n`,
          );
        }
      }),
    );
}
