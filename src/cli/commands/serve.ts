import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import { type ConfigFlags, loadConfig } from '../../config.js';
import { createLogger } from '../../context.js';
import { startServer } from '../../server.js';
import { action, fail } from '../run.js';

function isAddressInUse(err: unknown): err is { code: string; port?: number; address?: string } {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === 'EADDRINUSE';
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
          if (isAddressInUse(err)) {
            fail(`cannot listen on ${err.address ?? ''}:${err.port ?? ''}: the port is already in use (--port)`);
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
