import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { freePortRange } from '../helpers/cli.js';
import { captureLog } from '../helpers/log-capture.js';

/** Metrics turned on without a token are public: the server says so at start-up, and not otherwise. */
describe('the open-metrics warning at start-up (sqlite)', () => {
  const startAndLog = async (env: Record<string, string>) => {
    const log = captureLog('warn');
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-metrics-'));
    const [port] = [await freePortRange(1)];
    const server = await startServer(loadConfig({ port, data: dataDir }, { LOG_LEVEL: 'silent', ...env }), {
      logRequests: false,
      logger: log.logger,
    });
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
    return log.text();
  };

  it('warns when /metrics has no token, and is quiet with one', async () => {
    expect(await startAndLog({ PARLEY_METRICS: 'true' })).toContain('/metrics is public');
    expect(
      await startAndLog({ PARLEY_METRICS: 'true', PARLEY_METRICS_TOKEN: 'a-long-enough-token-1234567890' }),
    ).not.toContain('/metrics is public');
  });
});
