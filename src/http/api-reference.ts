import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { readDashboardFile } from '../dashboard/dashboard-files.js';

/**
 * The API reference page at /api/docs: Swagger UI rendering this region's /api/openapi.json, every
 * script, style and image served by Parley from the swagger-ui-dist package (no internet needed),
 * public like the document itself, and kept out of the document. It carries Parley's name and
 * mark (the dashboard's own files), not Swagger's.
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

/** The top bar in Parley's colours; the wordmark replaces Swagger's logo there. */
const THEME_CSS = [
  '.swagger-ui .topbar { background-color: #0a2540; padding: 8px 0; }',
  '.swagger-ui .topbar .download-url-wrapper { display: none; }',
  '.swagger-ui .topbar a img { height: 40px; width: auto; }',
].join('\n');

export async function apiReference(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: PAGE_POLICY,
    validatorUrl: false,
    uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 1 },
    logo: { type: 'image/svg+xml', content: readDashboardFile('assets', 'parley-wordmark.svg') },
    theme: {
      title: 'Parley API reference',
      css: [{ filename: 'parley.css', content: THEME_CSS }],
      favicon: [
        {
          filename: 'parley.svg',
          rel: 'icon',
          sizes: 'any',
          type: 'image/svg+xml',
          content: readDashboardFile('assets', 'parley.svg'),
        },
      ],
    },
  });
}
