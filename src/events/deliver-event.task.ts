import { isIP } from 'node:net';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import type { EventsConfig } from '../config.js';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { guardedLookup, isPrivateAddress, PrivateAddressError } from './address-guard.js';
import { findDeliveryToSend, recordDeliveryAttempt, setDeliveryFailed } from './delivery.repository.js';
import { clearEndpointFailing, disableEndpointRow, markEndpointFailing } from './endpoint.repository.js';
import { EVENT_DELIVERY_QUEUE, type EventDeliveryJob } from './event.service.js';

const USER_AGENT = 'Parley-Webhooks/1';
const MAX_ERROR = 1000;

/** The `webhook-signature` header: one `v1,<base64>` per secret that signs now (two during a rotation). */
export function signatureHeader(secrets: readonly string[], id: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
}

/** A private address refused (thrown by the check, or by the socket's lookup inside undici). */
function refusal(err: unknown): PrivateAddressError | undefined {
  if (err instanceof PrivateAddressError) return err;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof PrivateAddressError ? cause : undefined;
}

export interface EventDelivererOptions {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: EventsConfig;
  /** Opens the endpoints' sealed signing secrets. */
  readonly secrets: { open(sealed: string): string };
}

/**
 * Delivers events to endpoints, one job per delivery, signed per Standard Webhooks (the same
 * `webhook-id` on every attempt). A 2xx is delivered; a 410 disables the endpoint; anything else
 * (another status, a redirect, a timeout, a refused connection) is retried on the configured
 * schedule, and an endpoint whose deliveries keep failing past `disableAfterMs` is disabled.
 * Unless allowed, an endpoint resolving to a private, loopback or link-local address is refused,
 * checked on the address the connection really uses.
 */
export class EventDeliverer {
  private agent: Agent | undefined;

  constructor(private readonly options: EventDelivererOptions) {}

  define(jobs: JobRunner): void {
    jobs.define<EventDeliveryJob>({
      name: EVENT_DELIVERY_QUEUE,
      concurrency: 16,
      retryDelaysMs: this.options.config.retryDelaysMs,
      handler: (payload) => this.deliver(payload.deliveryId),
      onLastFailure: (payload, _job, err) => this.fail(payload.deliveryId, errorText(err)),
    });
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  private dispatcher(): Agent {
    this.agent ??= new Agent({
      connect: {
        timeout: this.options.config.timeoutMs,
        ...(this.options.config.allowPrivate ? {} : { lookup: guardedLookup }),
      },
      // A delivery is one request; keep a few sockets per endpoint warm for the next ones.
      keepAliveTimeout: 10_000,
    });
    return this.agent;
  }

  async deliver(deliveryId: string): Promise<void> {
    const { db, clock, config } = this.options;
    const row = await findDeliveryToSend(db, deliveryId);
    // Deleted with its endpoint, or delivered by an earlier run of this job.
    if (!row || row.status === 'delivered') return;
    if (row.disabled_at !== null) {
      await this.fail(deliveryId, `the endpoint is disabled: ${row.disabled_reason ?? 'no reason given'}`);
      return;
    }
    const now = clock.now();
    const box = this.options.secrets;
    const secrets = [box.open(row.secret)];
    if (row.previous_secret && row.previous_secret_until !== null && Number(row.previous_secret_until) > now) {
      secrets.push(box.open(row.previous_secret));
    }
    let status: number | undefined;
    let error: string | undefined;
    try {
      status = await this.post(row.url, row.event_id, row.payload, secrets);
    } catch (err) {
      const refused = refusal(err);
      if (refused) {
        await this.record(deliveryId, { status: 'failed', error: refused.message });
        this.options.logger.warn({ deliveryId, endpointId: row.endpoint_id, reason: refused.message }, 'event refused');
        return;
      }
      error = describeNetworkError(err, config.timeoutMs);
    }
    if (status !== undefined && status >= 200 && status < 300) {
      await this.record(deliveryId, { status: 'delivered', code: status });
      await clearEndpointFailing(db, row.endpoint_id);
      return;
    }
    if (status === 410) {
      await this.record(deliveryId, { status: 'failed', code: 410, error: 'the endpoint answered 410 Gone' });
      await this.disable(row.endpoint_id, 'the endpoint answered 410 Gone');
      return;
    }
    const reason =
      error ??
      (status !== undefined && status >= 300 && status < 400
        ? `the endpoint answered ${status}, a redirect (redirects are not followed)`
        : `the endpoint answered ${status}`);
    await this.record(deliveryId, {
      status: 'pending',
      ...(status !== undefined ? { code: status } : {}),
      error: reason,
    });
    // A run of failures that has lasted too long disables the endpoint.
    const endpoint = await markEndpointFailing(db, row.endpoint_id, now);
    const since = endpoint?.failing_since === null || endpoint === undefined ? now : Number(endpoint.failing_since);
    if (now - since >= config.disableAfterMs) {
      const days = Math.round(config.disableAfterMs / 86_400_000);
      await this.disable(row.endpoint_id, `deliveries failed for ${days > 0 ? `${days} days` : 'too long'}`);
      await this.fail(deliveryId, reason);
      return;
    }
    throw new Error(reason);
  }

  /** POSTs the signed body; resolves with the status. Redirects are answers, not followed. */
  private async post(url: string, id: string, body: string, secrets: readonly string[]): Promise<number> {
    const { config } = this.options;
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    if (!config.allowPrivate && isIP(host) && isPrivateAddress(host)) throw new PrivateAddressError(host, host);
    const at = new Date(this.options.clock.now());
    const res = await request(url, {
      method: 'POST',
      dispatcher: this.dispatcher(),
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signatureHeader(secrets, id, at, body),
      },
      body,
      headersTimeout: config.timeoutMs,
      bodyTimeout: config.timeoutMs,
      signal: AbortSignal.timeout(config.timeoutMs),
    });
    // Only the status matters; the body is read (bounded) and dropped so the socket is reused.
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    return res.statusCode;
  }

  private async record(
    deliveryId: string,
    outcome: { status: 'pending' | 'delivered' | 'failed'; code?: number; error?: string },
  ): Promise<void> {
    const now = this.options.clock.now();
    await recordDeliveryAttempt(
      this.options.db,
      deliveryId,
      { status: outcome.status, code: outcome.code ?? null, error: outcome.error?.slice(0, MAX_ERROR) ?? null },
      now,
    );
  }

  /** The last attempt failed (its failure is already recorded): the delivery is failed for good. */
  private async fail(deliveryId: string, error: string): Promise<void> {
    await setDeliveryFailed(this.options.db, deliveryId, error.slice(0, MAX_ERROR), this.options.clock.now());
  }

  private async disable(endpointId: string, reason: string): Promise<void> {
    await disableEndpointRow(this.options.db, endpointId, this.options.clock.now(), reason);
    this.options.logger.warn({ endpointId, reason }, 'event endpoint disabled');
  }
}

function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, MAX_ERROR);
}

function describeNetworkError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
    return `no answer within ${timeoutMs / 1000} seconds`;
  }
  const code = e.code ?? e.cause?.code;
  return `could not reach the endpoint${code ? ` (${code})` : ''}: ${e.message ?? String(err)}`.slice(0, MAX_ERROR);
}
