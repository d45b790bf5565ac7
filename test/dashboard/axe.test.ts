import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from '../helpers/axe.js';
import { HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';

/** The accessibility check every browser test relies on finds what it must. */
describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('the accessibility check of the browser tests', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('names the serious and critical violations of a page, and none of a sound one', async () => {
    const page = await browser.newPage();
    await page.setContent(
      '<html lang="en"><title>Broken</title><main><button></button><img src="x.png"></main></html>',
    );
    const found = await seriousViolations(page);
    expect(found.map((line) => line.split(':')[0]).sort()).toEqual(['button-name', 'image-alt']);
    expect(found.find((line) => line.startsWith('button-name'))).toContain('(button)');
    await page.setContent(
      '<html lang="en"><title>Sound</title><main><h1>Hello</h1><button>Send</button><img src="x.png" alt="A parcel"></main></html>',
    );
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});
