import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * The API reference page at /api/docs: Swagger UI rendering this region's /api/openapi.json, every
 * script, style and image served by Parley from the swagger-ui-dist package (no internet needed),
 * public like the document itself, and kept out of the document.
 */
const PAGE_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join('; ');

export async function apiReference(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: PAGE_POLICY,
    validatorUrl: false,
    uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 1 },
  });
}
