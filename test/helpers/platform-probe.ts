/**
 * A real Parley app with a few extra protected "probe" routes registered before it is ready, so
 * the platform (auth, envelopes, hardening, last used) is tested through HTTP whatever feature
 * routes exist. The probes use the same auth hook and envelopes as the feature routes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { findAgent } from '../../src/agents/agent.service.js';
import { assertAgentAllowed, targetAgentId } from '../../src/auth/auth.js';
import { loadConfig } from '../../src/config.js';
import { type AppContext, createContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { buildApp } from '../../src/http/app.js';
import { BEARER, principalOf, requireKey } from '../../src/http/auth.js';
import { errorResponses } from '../../src/http/errors.js';
import type { Permission } from '../../src/keys/permissions.js';
import type { Clock } from '../../src/shared/clock.js';
import { AppError } from '../../src/shared/errors.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { PG_SECRETS, PG_URL, type TestApp, type TestDialect } from './app.js';
import { seedFromTemplate } from './templates.js';

export const PROBE_CODED = '/api/__probe/coded';
export const PROBE_CHANNEL = '/api/channels/__probe';
export const PROBE_AGENT = '/api/__probe/agents';
export const PROBE_CRASH = '/api/__probe/crash';
/** Agent in the path, like the trigger route. */
export const PROBE_AGENT_PATH = '/api/__probe/agents/:agentId/run';
/** Answers after `?ms=` milliseconds (in-flight requests at shutdown). */
export const PROBE_SLOW = '/api/__probe/slow';
let slowStarted = 0;
/** How many requests to PROBE_SLOW have reached their handler (a test waits for one to be in flight). */
export const slowRequestsStarted = (): number => slowStarted;
export const INTERNAL_SECRET = 'db password is hunter2 at /srv/internal/secret.ts:42';

const ProbeBody = Type.Object(
  { convId: Type.Optional(Type.String({ minLength: 1 })), n: Type.Optional(Type.Integer()) },
  { additionalProperties: false },
);
const ProbeOk = Type.Object({
  ok: Type.Literal(true),
  orgId: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
});

export interface ProbeOptions {
  clock?: Clock;
  env?: Record<string, string>;
  /** Permission the probe routes require (default: coded → endusers, channel → channels). */
  codedPermission?: Permission;
  /** A logger to capture what the app logs (requests are logged when it is given). */
  logger?: Logger;
}

export async function createProbeApp(dialect: TestDialect, options: ProbeOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-probe-'));
  const schema = `t_${randomBase62(12).toLowerCase()}`;
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_REGION: 'us',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
    ...options.env,
  };
  const config = loadConfig({}, env);
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  if (!options.env?.PARLEY_DATA_DIR && !options.env?.PARLEY_PG_SCHEMA)
    await seedFromTemplate(region.database, config.jobs.leaseMs);
  const ctx = await createContext(config, region, {
    logger: options.logger ?? createLogger(config),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const app = await buildApp(ctx, { logRequests: options.logger !== undefined });
  registerProbes(app, ctx, options.codedPermission ?? 'endusers');
  await app.ready();
  return {
    app,
    ctx,
    dialect,
    env,
    async close() {
      await app.close();
      await ctx.close();
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function registerProbes(app: FastifyInstance, ctx: AppContext, codedPermission: Permission) {
  const handler = async (request: FastifyRequest) => {
    const principal = principalOf(request);
    const body = (request.body ?? {}) as { convId?: string };
    const { agentId: inPath } = request.params as { agentId?: string };
    const agentId = targetAgentId(principal, inPath ?? body.convId);
    if (agentId !== undefined) {
      const agent = await findAgent(ctx.db, principal.orgId, agentId);
      if (!agent) throw new AppError('NOT_FOUND', `No agent matches "${agentId}".`);
      assertAgentAllowed(principal, agent.id);
    }
    return { ok: true as const, orgId: principal.orgId, agentId: agentId ?? null };
  };
  app.post(
    PROBE_CODED,
    {
      onRequest: requireKey(ctx, codedPermission),
      config: { family: 'coded' },
      schema: {
        security: BEARER,
        body: ProbeBody,
        response: { 200: ProbeOk, ...errorResponses('coded', [400, 401, 403, 404, 413]) },
      },
    },
    handler,
  );
  app.get(
    PROBE_CODED,
    {
      onRequest: requireKey(ctx, codedPermission),
      config: { family: 'coded' },
      schema: { security: BEARER, response: { 200: ProbeOk, ...errorResponses('coded', [401, 403]) } },
    },
    handler,
  );
  app.post(
    PROBE_CHANNEL,
    {
      onRequest: requireKey(ctx, 'channels'),
      config: { family: 'channel' },
      schema: {
        security: BEARER,
        body: ProbeBody,
        response: { 200: ProbeOk, ...errorResponses('channel', [400, 401, 403, 404, 413]) },
      },
    },
    handler,
  );
  app.post(
    PROBE_AGENT,
    {
      onRequest: requireKey(ctx, 'triggers'),
      config: { family: 'channel' },
      schema: {
        security: BEARER,
        body: ProbeBody,
        response: { 200: ProbeOk, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    handler,
  );
  app.post(
    PROBE_AGENT_PATH,
    {
      onRequest: requireKey(ctx, 'triggers'),
      config: { family: 'channel' },
      schema: {
        security: BEARER,
        params: Type.Object({ agentId: Type.String() }),
        body: ProbeBody,
        response: { 200: ProbeOk, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    handler,
  );
  app.get(PROBE_SLOW, async (request) => {
    slowStarted++;
    const { ms } = request.query as { ms?: string };
    await new Promise((r) => setTimeout(r, Number(ms ?? 200)));
    return { done: true };
  });
  app.get(PROBE_CRASH, { config: { family: 'coded' } }, async () => {
    throw new Error(INTERNAL_SECRET);
  });
}
