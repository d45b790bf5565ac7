import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import type { LiveChange } from '../live/index.js';
import { cookies, type PageKit, SESSION_COOKIE } from './page-kit.js';
import { sessionStillLive } from './session.service.js';

/** Changes that arrive together are told as one event after this pause. */
const COALESCE_MS = 25;
/** A comment this often keeps proxies from closing an idle stream, and re-checks the session. */
const KEEPALIVE_MS = 15_000;
/** How soon a browser opens a dropped stream again (`retry:`). */
const RETRY_MS = 1_000;

/**
 * The stream an open inbox page listens to (`GET /dashboard/inbox/stream`, server-sent events, read
 * by htmx's SSE extension): an event `changed` whenever something the page shows may have changed
 * (a message either way, a status, a handoff, an assignment, a note), on whichever node it happened
 * (ctx.live); the page then reads its parts again, with its person's own permissions, so an event
 * carries nothing but the kinds of change. With `?conversation=<id>`, only that conversation's
 * changes. The stream ends when the session does (checked without counting as a use) and when the
 * server shuts down; the page opens it again and reads everything (dashboard.js), so what happened
 * while it was away is caught up.
 */
export function registerInboxStream(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const open = new Set<ServerResponse>();
  // Streams never end by themselves: ended here so that the server's close does not wait on them.
  app.addHook('preClose', async () => {
    for (const res of open) res.end();
    open.clear();
  });

  app.get('/dashboard/inbox/stream', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const only = String((request.query as Record<string, unknown>).conversation ?? '').slice(0, 64) || undefined;
    const token = cookies(request)[SESSION_COOKIE];
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
      connection: 'keep-alive',
    });
    res.write(`retry: ${RETRY_MS}\n\n`);
    open.add(res);
    let seq = 0;
    let timer: NodeJS.Timeout | undefined;
    const kinds = new Set<string>();
    const flush = () => {
      timer = undefined;
      if (res.writableEnded) return;
      res.write(`id: ${++seq}\nevent: changed\ndata: ${[...kinds].join(',')}\n\n`);
      kinds.clear();
    };
    const unsubscribe = ctx.live.subscribe(session.org.id, (change: LiveChange & { all: boolean }) => {
      const wanted =
        change.kind === 'resync' ||
        change.all ||
        (only ? change.conversationIds.includes(only) : change.kind !== 'note');
      if (!wanted) return;
      kinds.add(change.kind);
      timer ??= setTimeout(flush, COALESCE_MS);
    });
    const keepalive = setInterval(() => {
      void (async () => {
        const live = await sessionStillLive(ctx.db, ctx.clock, ctx.config.dashboard, token).catch(() => true);
        if (res.writableEnded) return;
        if (!live) {
          res.write('event: signedout\ndata: \n\n');
          res.end();
          return;
        }
        res.write(': keepalive\n\n');
      })();
    }, KEEPALIVE_MS);
    const done = () => {
      unsubscribe();
      clearInterval(keepalive);
      if (timer) clearTimeout(timer);
      open.delete(res);
    };
    // The response's own close: the browser went away (or the stream was ended here).
    res.on('close', done);
  });
}
