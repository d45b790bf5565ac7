import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { analyticsRoutes } from '../analytics/analytics.routes.js';
import { campaignRoutes } from '../campaigns/campaign.routes.js';
import { segmentSendRoutes } from '../campaigns/segment-send.routes.js';
import { channelRoutes } from '../channels/channel.routes.js';
import { sendCheckRoutes } from '../channels/send-check.routes.js';
import { type Config, REGION_NAMES } from '../config.js';
import type { AppContext } from '../context.js';
import { conversationRoutes } from '../conversations/conversation.routes.js';
import { dashboardRoutes } from '../dashboard/dashboard.routes.js';
import { endUserRoutes } from '../end-users/end-user.routes.js';
import { mediaDownloadRoutes } from '../media/media-download.routes.js';
import { mediaUploadRoutes } from '../media/media-upload.routes.js';
import { messageRoutes } from '../messaging/message.routes.js';
import { webhookRoutes } from '../messaging/webhook.routes.js';
import { installMetricsHook, opsRoutes } from '../ops/ops.routes.js';
import { templateRoutes } from '../policies/template.routes.js';
import { sandboxRoutes } from '../sandbox/sandbox.routes.js';
import { sentLogRoutes } from '../sandbox/sent-log.routes.js';
import { segmentRoutes } from '../segments/segment.routes.js';
import { AppError } from '../shared/errors.js';
import { triggerRoutes } from '../triggers/trigger.routes.js';
import { apiReference } from './api-reference.js';
import { settleKeyEpoch, unconfirmedKey } from './auth.js';
import {
  ChannelError,
  CodedError,
  clientError,
  frameworkError,
  installErrorHandlers,
  installServerEdges,
} from './errors.js';
import { addImpliedResponses } from './implied-responses.js';
import { checkUrlForNul, installJsonParser } from './json-body.js';
import { API_LICENSE, finishDocument } from './openapi-document.js';
import { publicRoutes } from './public.routes.js';
import { lazyChildLogger, RequestLogController } from './request-log.js';
import { PAGE_SECURITY_HEADERS, SECURITY_HEADERS } from './security-headers.js';
import { installValidators } from './validation.js';

export const API_VERSION = '3.0.0';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface BuildOptions {
  /** Log requests (off in tests unless asked for). */
  logRequests?: boolean;
}

/** The configured level; without request logging, at least `warn` (never chattier than configured). */
function requestLogLevel(logger: Logger, options: BuildOptions): string {
  if (options.logRequests !== false) return logger.level;
  return logger.levelVal >= (logger.levels.values.warn ?? 40) ? logger.level : 'warn';
}

/** Fastify's types take no hop count, so a number becomes the function proxy-addr would make of it. */
function fastifyTrustProxy(
  value: Config['trustProxy'],
): boolean | string | string[] | ((address: string, hop: number) => boolean) {
  if (typeof value === 'number') return (_address, hop) => hop < value;
  return typeof value === 'object' ? [...value] : value;
}

export async function buildApp(ctx: AppContext, options: BuildOptions = {}): Promise<FastifyInstance> {
  const limits = ctx.config.http;
  const logger = ctx.logger.child({}, { level: requestLogLevel(ctx.logger, options) });
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request, and no child logger per request unless something is logged through it.
    logController: new RequestLogController(logger),
    childLoggerFactory: lazyChildLogger,
    bodyLimit: ctx.config.bodyLimit,
    // PARLEY_TRUST_PROXY: behind a balancer, request.ip is the client named in X-Forwarded-For.
    trustProxy: fastifyTrustProxy(ctx.config.trustProxy),
    // Fastify would echo any X-Request-Id verbatim; genReqId alone decides, so only a sane ID is kept.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Fastify's own 503 while closing would skip the envelope; the onRequest hook below answers it.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Long enough for any ID a route takes (message IDs are up to 512); longer segments: 404 below.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // Slow clients are let go (a body dripped a byte at a time holds a socket for ever otherwise);
    // Node checks these bounds every connectionsCheckingInterval, so that is kept well below them.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
      // A request without Host is answered by the onRequest hook, in the envelope, not by Node.
      requireHostHeader: false,
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.maxConnections = limits.maxConnections;
  installServerEdges(app.server);

  app.decorateRequest('principal', null);
  installValidators(app);
  installErrorHandlers(app, ctx.config.bodyLimit, (request) => settleKeyEpoch(ctx, request));
  // JSON only: Fastify's default text/plain parser would let a non-JSON body reach the schema.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);

  // Once shutdown starts, responses still in flight close their connection: a keep-alive client
  // would otherwise hold the server open until its idle timeout (72 s), past the shutdown delay.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // The app's one hook before any route's own (so before authentication and before the body is
  // read): a request arriving while the server shuts down is a 503, and a URL holding a NUL (`%00`)
  // is refused from the URL alone, like a malformed path. (An unknown route needs no hook: the
  // error handler turns whatever its body caused into the 404.)
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      done(
        new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry in a moment.', {
          headers: { 'retry-after': '1' },
        }),
      );
    } else if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1 && !request.headers.host) {
      // Malformed: answered, then the connection is closed.
      reply.header('connection', 'close');
      done(new AppError('MALFORMED_REQUEST', 'The request has no Host header, which HTTP/1.1 requires.'));
    } else {
      done(checkUrlForNul(request));
    }
  });
  // Off unless PARLEY_METRICS is set: then every answer is counted (no hook at all otherwise).
  if (ctx.metrics) installMetricsHook(app, ctx.metrics);
  app.addHook('onSend', (request, reply, payload, done) => {
    // Fail closed: a key admitted on the cache whose epoch the route never confirmed answers the 401
    // of a revoked key, not what the route answered (src/auth/key-epoch.ts). The error's own answer
    // comes back through this hook, with the key no longer pending.
    const unconfirmed = unconfirmedKey(request);
    if (unconfirmed) {
      done(unconfirmed);
      return;
    }
    // A page that sets its own policy (the API reference at /api/docs) keeps it.
    if (reply.hasHeader('content-security-policy')) reply.headers(PAGE_SECURITY_HEADERS);
    else reply.headers(SECURITY_HEADERS);
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Parley API',
        version: API_VERSION,
        description:
          'Messaging and end-user API for conversational agents. Every call except /api/health and ' +
          '/api/openapi.json needs `Authorization: Bearer <API key>`. Keys and data belong to one region.',
      },
      servers: [{ url: ctx.region.baseUrl, description: `${REGION_NAMES[ctx.region.region]} (${ctx.region.region})` }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'prl_<region>_<38 base62 characters>',
            description: 'An API key of this region, sent as a Bearer token.',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (document) =>
      'openapiObject' in document
        ? (finishDocument(
            document.openapiObject as Record<string, unknown>,
            API_LICENSE,
          ) as typeof document.openapiObject)
        : document.swaggerObject,
  });
  // Before any route: each documented route also lists the errors its shape implies (a 413 for a body...).
  app.addHook('onRoute', addImpliedResponses);
  app.addSchema(ChannelError);
  app.addSchema(CodedError);
  await app.register(apiReference);

  await app.register(publicRoutes, { ctx });
  await registerFeatures(app, ctx);
  return app;
}

/** Feature route plugins, each from its feature folder. Add one line per feature. */
async function registerFeatures(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const features: FastifyPluginAsync<{ ctx: AppContext }>[] = [
    // feature plugins go here, e.g. endUserRoutes, channelRoutes
    endUserRoutes,
    segmentRoutes,
    channelRoutes,
    sendCheckRoutes,
    messageRoutes,
    triggerRoutes,
    conversationRoutes,
    campaignRoutes,
    segmentSendRoutes,
    analyticsRoutes,
    webhookRoutes,
    sandboxRoutes,
    sentLogRoutes,
    mediaDownloadRoutes,
    mediaUploadRoutes,
    templateRoutes,
    opsRoutes,
    // The web dashboard (/dashboard): HTML pages, hidden from the API description.
    dashboardRoutes,
  ];
  for (const feature of features) await app.register(feature, { ctx });
}
