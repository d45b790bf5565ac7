import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { probeStorage, storageFailure } from '../db/storage-health.js';
import { errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import type { Metrics } from './metrics.js';
import { selectOne } from './ops.repository.js';

const Ready = Type.Object(
  { status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]) },
  {
    title: 'Readiness',
    description: 'Whether this node can serve: its database answers, and its Redis when one is configured.',
  },
);

/** How long a dependency may take to answer the readiness check. */
const CHECK_TIMEOUT_MS = 2_000;

async function databaseAnswers(ctx: AppContext): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      selectOne(ctx.db).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
      }),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const sameToken = (given: string, expected: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** Counts and times every answer under its route's pattern (never the raw URL: bounded labels). */
export function installMetricsHook(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
}

/** Readiness for load balancers, and Prometheus metrics when enabled. */
export const opsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/api/ready',
    {
      schema: {
        summary: 'Readiness check',
        description:
          'For load balancers: 200 when this node can serve (its database answers, and its Redis when one is ' +
          'configured), else 503 with Retry-After. Public; it names no dependency and no error. ' +
          '`GET /api/health` is the liveness check, which needs neither.',
        tags: ['public'],
        security: [],
        response: { 200: Ready, ...errorResponses('coded', [400]), 503: Ready },
      },
    },
    async (_request, reply) => {
      const ready =
        (await databaseAnswers(ctx)) &&
        // After a storage failure (a full disk), not ready until a write succeeds again.
        (storageFailure() === undefined || (await probeStorage(ctx.db, ctx.database.dialect))) &&
        ctx.sendRateLimiter.sharedStoreHealthy();
      reply.header('cache-control', 'no-store');
      if (ready) return { status: 'ready' as const };
      reply.header('retry-after', '5');
      return reply.code(503).send({ status: 'unavailable' as const });
    },
  );

  const metrics = ctx.metrics;
  if (!metrics) return;
  const token = ctx.config.metrics.token;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (token !== undefined) {
      const given = request.headers.authorization?.replace(/^Bearer\s+/i, '') ?? '';
      if (!sameToken(given, token)) throw new AppError('UNAUTHORIZED', 'This metrics endpoint needs its bearer token.');
    }
    reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store');
    return reply.send(await metrics.registry.metrics());
  });
};
