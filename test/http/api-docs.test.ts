import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';

describe('the API reference at /api/docs', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('is public, served with its own page policy, every asset from Parley, and kept out of the document', async () => {
    const page = await fetch(`${url}/api/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    // Nothing loaded from elsewhere: every src and href is relative to Parley.
    const links = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) expect(link, link).not.toMatch(/^(https?:)?\/\//);
    const bundle = await fetch(`${url}/api/docs/static/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    const spec = await fetch(`${url}/api/docs/json`);
    expect(((await spec.json()) as { info: { version: string } }).info.version).toBe('3.0.0');
    const doc = (await (await fetch(`${url}/api/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/api/docs'))).toEqual([]);
    // The JSON API keeps its strict policy.
    expect((await fetch(`${url}/api/health`)).headers.get('content-security-policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
  });

  it.skipIf(!HAVE_CHROMIUM && !IN_CI)('renders every operation in a real browser, offline', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const outside: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(url)) outside.push(r.url());
      });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${url}/api/docs`);
      await page.getByText('POST/api/triggers/{agentId}/{triggerId}').first().waitFor({ timeout: 30_000 });
      expect(await page.getByText('/api/channels/send').count()).toBeGreaterThan(0);
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
