import { request } from 'undici';
import { syncTemplates } from '../../src/policies/template-sync.service.js';
import type { MessagingTestApp } from './messaging.js';

/** Reads an organization's (or one number's) templates from the sandbox into its catalogue, as a sync does. */
export async function syncCatalogue(t: MessagingTestApp, filter: { orgId?: string; numberId?: string }) {
  const results = await syncTemplates(t.ctx.policies, filter);
  for (const r of results) if (!r.synced) throw new Error(`sync failed: ${r.error}`);
  return results;
}

/** A POST to the in-process sandbox (its provider endpoints, or its own controls). */
export async function sandboxPost(t: MessagingTestApp, path: string, body: unknown) {
  const res = await request(`${t.sandbox.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sandbox' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

/** Makes a template in the sandbox's account (PENDING), as `parley sandbox template create` does. */
export function createSandboxTemplate(
  t: MessagingTestApp,
  input: { name: string; language?: string; category?: string; body?: number; header?: number },
) {
  const marks = (n: number) => Array.from({ length: n }, (_, i) => `{{${i + 1}}}`).join(' ');
  return sandboxPost(t, '/v25.0/sandbox-waba/message_templates', {
    name: input.name,
    language: input.language ?? 'en_US',
    category: input.category ?? 'UTILITY',
    components: [
      ...(input.header ? [{ type: 'HEADER', format: 'TEXT', text: `Hi ${marks(input.header)}` }] : []),
      { type: 'BODY', text: `Hello ${marks(input.body ?? 0)}` },
    ],
  });
}

/** Sets a sandbox template's status; the sandbox delivers the signed status webhook to Parley. */
export function setSandboxTemplateStatus(t: MessagingTestApp, name: string, status: string, language = 'en_US') {
  return sandboxPost(t, '/sandbox/templates/status', { name, language, status });
}
