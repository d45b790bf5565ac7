/**
 * A node killed with kill -9 in the middle of an inbound file's download: the download is a job
 * of the runner, so the next node runs it again, stores the whole file and raises the message's
 * `message.received` once. The built `parley sandbox inbound --image` is run against it too.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { createTestApp, DIALECTS } from '../helpers/app.js';
import { freePort, runCli, type ServeProcess, startServe } from '../helpers/cli.js';
import { fetchBytes, pngOf, sha256Of } from '../helpers/media.js';
import { makeSendingTenant, randomPhone } from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

interface Received {
  type: string;
  data: Record<string, unknown> & { media?: Record<string, unknown> };
}

describe.each(DIALECTS)('an inbound file and kill -9 (%s)', (dialect) => {
  it('the node dies mid-download: the next one downloads it again, stores it whole and raises its event once', async () => {
    // In-process only to set up and read the database: it works no jobs.
    const t = await createTestApp(dialect, { workJobs: false, env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    const receiver = await startReceiver();
    const env: Record<string, string> = {
      ...t.env,
      PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'warn',
      PARLEY_JOB_LEASE_MS: '1500',
      PARLEY_JOB_POLL_MS: '100',
      PARLEY_EVENT_RETRY_DELAYS_MS: '100,100',
    };
    let first: ServeProcess | undefined;
    let second: ServeProcess | undefined;
    try {
      const x = await makeSendingTenant(t.ctx);
      await createEndpoint(t.ctx, { orgId: x.org.id, url: `${receiver.url}/hook`, agentId: x.agent.id });
      const events = () =>
        receiver.received.map((r) => JSON.parse(r.body) as Received).filter((e) => e.type === 'message.received');

      // The first node's sandbox serves files at 200 KB/s: a 1 MB photo takes 5 s to download.
      const one = await startServe(['--port', String(await freePort())], {
        ...env,
        PARLEY_SANDBOX_MEDIA_BYTES_PER_SECOND: '200000',
      });
      first = one;
      if (dialect === 'postgres') {
        await until(
          () => /every node must share that folder/.test(one.output()),
          'the start-up warning of the folder store',
        );
      }
      const photo = randomBytes(1024 * 1024);
      const res = await fetch(`${one.ready.regions[0]?.url}/api/sandbox/inbound`, {
        method: 'POST',
        headers: { ...x.agentKey.auth, 'content-type': 'application/json' },
        body: JSON.stringify({
          from: randomPhone(),
          image: { data: photo.toString('base64'), mimeType: 'image/jpeg' },
        }),
      });
      expect(res.status).toBe(200);
      const { messageId } = (await res.json()) as { messageId: string };

      // Killed while the file is half-way down.
      const folder = join(env.PARLEY_DATA_DIR ?? '', 'media', 'us', x.org.id);
      const partial = () => (existsSync(folder) ? readdirSync(folder).filter((f) => f.endsWith('.part')) : []);
      await until(() => partial().length > 0, 'the download to be under way', 60_000);
      one.child.kill('SIGKILL');
      await one.stop();
      const pending = await t.ctx.db.selectFrom('media').selectAll().where('source', '=', 'inbound').execute();
      expect(pending.map((m) => m.state)).toEqual(['pending']);
      expect(events()).toEqual([]);

      // The next node runs the job again once the dead node's lease lapses.
      const two = await startServe(['--port', String(await freePort())], env);
      second = two;
      await until(() => events().length > 0, 'message.received after the restart', 120_000);
      const [event] = events();
      expect(event?.data).toMatchObject({
        messageId,
        type: 'image',
        media: { mimeType: 'image/jpeg', size: photo.length, sha256: sha256Of(photo), available: true },
      });
      const url2 = two.ready.regions[0]?.url ?? '';
      const got = await fetchBytes(`${url2}/api/media/${String(event?.data.media?.id)}`, x.agentKey.auth);
      expect(got.status).toBe(200);
      expect(got.bytes.equals(photo)).toBe(true);
      // Nothing of the killed download is left beside the file.
      expect(partial()).toEqual([]);

      // The command line: a photo from a file, with a caption.
      const file = join(env.PARLEY_DATA_DIR ?? '', 'parcel.png');
      const png = pngOf(32, 32, [10, 120, 200]);
      writeFileSync(file, png);
      const cli = await runCli(
        [
          'sandbox',
          'inbound',
          '--agent',
          x.agent.id,
          '--from',
          randomPhone(),
          '--image',
          file,
          '--caption',
          'Broken box',
        ],
        env,
      );
      expect(cli.stderr).toBe('');
      expect(cli.stdout).toMatch(/^delivered wamid\.\S+ from \+1650\d+ to \+\d+; the 24-hour window is open/);
      await until(() => events().length > 1, 'message.received of the photo sent from the command line');
      expect(events()[1]?.data).toMatchObject({
        type: 'image',
        text: 'Broken box',
        media: { mimeType: 'image/png', size: png.length, sha256: sha256Of(png), available: true },
      });
      // One event per message: the restart raised none twice.
      expect(events().map((e) => e.data.messageId)).toHaveLength(2);
    } finally {
      await second?.stop();
      await first?.stop();
      await receiver.close();
      await t.close();
    }
  }, 300_000);
});
