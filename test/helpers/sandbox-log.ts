import { expect } from 'vitest';
import type { SandboxSentItem as SentItemSchema } from '../../src/sandbox/sent-log.schemas.js';
import type { TestApp } from './app.js';
import { call } from './http.js';

/** An item of the log; `payload` is the Cloud API body, any JSON object. */
export type SandboxSentItem = Omit<SentItemSchema, 'payload'> & { readonly payload: Record<string, unknown> };

export interface SandboxLogQuery {
  /** Only requests to this recipient (E.164). */
  readonly to?: string;
  /** Only this agent's number (an organization key sees every number of its organization otherwise). */
  readonly agent?: string;
  readonly limit?: number;
}

/**
 * What the sandbox was sent from the key's organization's numbers, newest first: `GET
 * /api/sandbox/messages` with `auth` (a key holding Channels), asserted to answer 200. Each item's
 * `payload` is the exact Cloud API body; `messageId` is what the send answered (null when the
 * sandbox refused the request, with `error` its code); read receipts have `type: "read"`.
 */
export async function sandboxLog(
  t: TestApp & { readonly url?: string },
  auth: Record<string, string>,
  query: SandboxLogQuery = {},
): Promise<SandboxSentItem[]> {
  const params = new URLSearchParams();
  if (query.to !== undefined) params.set('to', query.to);
  if (query.agent !== undefined) params.set('agent', query.agent);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  const qs = params.size > 0 ? `?${params}` : '';
  const res = await call(t, { method: 'GET', url: `/api/sandbox/messages${qs}`, headers: auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: SandboxSentItem[] }>().data;
}

/** The payloads the sandbox received for `to` (newest first): what reached the provider. */
export async function sentPayloads(
  t: TestApp & { readonly url?: string },
  auth: Record<string, string>,
  to: string,
): Promise<Record<string, unknown>[]> {
  return (await sandboxLog(t, auth, { to, limit: 200 })).map((item) => item.payload);
}
