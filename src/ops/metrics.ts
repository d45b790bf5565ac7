import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { JobRunner } from '../jobs/job-runner.js';

/**
 * A messaging provider as the metrics see it: a send whose result says ok, or the kind of its
 * failure (messaging's MessagingProvider is one; named here by shape so that ops imports no feature).
 */
export interface TimedProvider<I, R extends { readonly ok: true } | { readonly ok: false; readonly kind: string }> {
  send(input: I): Promise<R>;
  close(): Promise<void>;
}

/**
 * Prometheus metrics of one region's server, in a registry of its own (several apps may share a
 * process: regions, tests). Built only when metrics are enabled; otherwise nothing is measured.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'parley_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly providerRequests = new Counter({
    name: 'parley_provider_requests_total',
    help: 'Calls to the messaging provider, by operation and outcome (ok, rejected, throttled, unknown, unavailable, config).',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly providerDuration = new Histogram({
    name: 'parley_provider_request_duration_seconds',
    help: 'Time the messaging provider took to answer, by operation.',
    labelNames: ['operation'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly jobFailures = new Counter({
    name: 'parley_job_failures_total',
    help: 'Background job attempts that failed, by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  readonly firstHumanReply = new Histogram({
    name: 'parley_first_human_reply_seconds',
    help: 'Time from a conversation handed to people to the first message a person sent in it.',
    buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600],
    registers: [this.registry],
  });

  constructor(region: string) {
    this.registry.setDefaultLabels({ region });
    collectDefaultMetrics({ register: this.registry, prefix: 'parley_' });
  }

  /** Job counts by queue and state, read from the job store at each scrape. */
  watchJobs(jobs: JobRunner): void {
    new Gauge({
      name: 'parley_jobs',
      help: 'Background jobs by queue and state (queued, running, dead), across every node.',
      labelNames: ['queue', 'state'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const c of await jobs.counts()) this.set({ queue: c.queue, state: c.state }, c.count);
      },
    });
  }

  /** Conversations waiting for a person (open, held by people, not answered since the end user wrote), at each scrape. */
  watchWaiting(count: () => Promise<number>): void {
    new Gauge({
      name: 'parley_conversations_waiting',
      help: 'Open conversations people hold whose end user waits for an answer, across every node.',
      registers: [this.registry],
      async collect() {
        this.set(await count());
      },
    });
  }

  /**
   * Each number's quality rating as the provider last gave it (src/policies/): 2 GREEN, 1 YELLOW,
   * 0 RED, -1 unknown, labelled by number and messaging limit.
   */
  watchNumberHealth(list: () => Promise<{ phone: string; quality: string; messagingLimit: string | null }[]>): void {
    const score: Record<string, number> = { GREEN: 2, YELLOW: 1, RED: 0 };
    new Gauge({
      name: 'parley_number_quality',
      help: "Each number's quality rating: 2 GREEN, 1 YELLOW, 0 RED, -1 unknown.",
      labelNames: ['number', 'messaging_limit'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const n of await list()) {
          this.set({ number: n.phone, messaging_limit: n.messagingLimit ?? 'unknown' }, score[n.quality] ?? -1);
        }
      },
    });
  }

  /** The provider, with each send timed and counted by outcome. */
  instrumentProvider<I, R extends { readonly ok: true } | { readonly ok: false; readonly kind: string }>(
    provider: TimedProvider<I, R>,
  ): TimedProvider<I, R> {
    return {
      send: async (input) => {
        const end = this.providerDuration.startTimer({ operation: 'send' });
        try {
          const result = await provider.send(input);
          this.providerRequests.inc({ operation: 'send', outcome: result.ok ? 'ok' : result.kind });
          return result;
        } catch (err) {
          this.providerRequests.inc({ operation: 'send', outcome: 'error' });
          throw err;
        } finally {
          end();
        }
      },
      close: () => provider.close(),
    };
  }
}
