import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type Config, defaultBaseUrl, type RegionConfig } from './config.js';
import { type AppContext, createContext } from './context.js';
import { databaseWarnings } from './db/database.js';
import { clearPrivateSwitch, publishPrivateSwitch } from './events/private-switch-file.js';
import { buildApp } from './http/app.js';
import { clearAddress, writeAddress } from './shared/address-file.js';
import type { Clock } from './shared/clock.js';
import { createLogger } from './shared/logger.js';

export interface RunningRegion {
  readonly region: RegionConfig;
  readonly ctx: AppContext;
  readonly app: FastifyInstance;
  readonly url: string;
  /** Written to `<data>/server-<region>.url` for the CLI (e.g. `parley demo`'s curl lines). */
  readonly publicUrl: string;
}

export interface RunningServer {
  readonly regions: readonly RunningRegion[];
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  logRequests?: boolean;
}

/** Starts one server per configured region, each on its own port with its own database. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config);
  const started: RunningRegion[] = [];
  // Idempotent: a second signal or a test's cleanup may call it again while it runs.
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const r of [...started].reverse()) {
        clearAddress(config.dataDir, 'server', r.region.region, r.publicUrl);
        clearPrivateSwitch(config.dataDir, r.region.region);
        await r.app.close();
        await r.ctx.close();
      }
    })();
    return closing;
  };
  if (config.metrics.enabled && config.metrics.token === undefined) {
    logger.warn(
      "PARLEY_METRICS is on without PARLEY_METRICS_TOKEN: /metrics is public on every region's port; set a token, or keep the port from the internet",
    );
  }
  try {
    for (const region of config.regions) {
      const ctx = await createContext(config, region, {
        logger: logger.child({ region: region.region }),
        ...(options.clock ? { clock: options.clock } : {}),
        backgroundCheckpoints: true,
      });
      let app: FastifyInstance;
      try {
        app = await buildApp(ctx, { logRequests: options.logRequests ?? true });
        await app.listen({ host: region.host, port: region.port });
      } catch (err) {
        await ctx.close();
        throw err;
      }
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : region.port;
      const url = `http://${region.host.includes(':') ? `[${region.host}]` : region.host}:${port}`;
      // The in-process sandbox delivers its webhooks to this very server.
      ctx.messaging.attachServer(url);
      // Webhook bodies acknowledged before an earlier stop but not yet applied.
      await ctx.messaging.webhooks.recover();
      // The base address callers use: the configured one, or where this server really listens.
      const publicUrl = region.baseUrl === defaultBaseUrl(region.host, region.port) ? url : region.baseUrl;
      writeAddress(config.dataDir, 'server', region.region, publicUrl);
      publishPrivateSwitch(config.dataDir, region.region, config.events.allowPrivate);
      started.push({ region, ctx, app, url, publicUrl });
      logger.info(
        { region: region.region, url, baseUrl: region.baseUrl, database: region.database.kind },
        'region ready',
      );
      // Where a person starts: the two addresses to open in a browser.
      logger.info(
        { region: region.region, dashboard: `${publicUrl}/dashboard`, apiReference: `${publicUrl}/api/docs` },
        `dashboard at ${publicUrl}/dashboard, API reference at ${publicUrl}/api/docs`,
      );
      for (const warning of await databaseWarnings(ctx.database)) logger.warn({ region: region.region }, warning);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { regions: started, close };
}
