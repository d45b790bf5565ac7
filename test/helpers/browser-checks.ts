import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { seriousViolations } from './axe.js';
import { IN_CI } from './browser.js';
import { ROOT } from './cli.js';
import { PASSWORD } from './dashboard.js';

/**
 * What the browser tests check on every page (test/dashboard/browser*.test.ts): no serious or
 * critical accessibility violation, a fit to the screen, a screenshot to look at; and signing in.
 */
export const SHOTS = join(ROOT, 'test-output', 'screenshots');
export const KEYS = '/dashboard/settings/integrations/api-keys';
export const DESKTOP = { viewport: { width: 1280, height: 800 } };
/**
 * A phone's screen: 390 CSS pixels, touch. One device pixel per CSS pixel: the layout is the same at
 * a phone's density, and rendering three times as many pixels was most of the browser's work.
 */
export const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 };

/**
 * Screenshots to look at (test-output/screenshots), taken wherever the suite runs but in CI (where
 * nobody looks at them), unless PARLEY_SCREENSHOTS=1 asks for them there too.
 */
export const TAKE_SHOTS = !IN_CI || process.env.PARLEY_SCREENSHOTS === '1';

/**
 * A screenshot of the page as it is now, `name`.png: the whole page (clipped to the screen's width:
 * what lies beyond it is what checkFit refuses), or only the screen. caret: 'initial', or
 * Playwright injects a style the page's CSP (rightly) refuses; scale 'css': one pixel per CSS pixel.
 */
export async function shot(page: Page, name: string, whole = true) {
  if (!TAKE_SHOTS) return;
  const width = page.viewportSize()?.width ?? 1280;
  const height = whole
    ? await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document
            .documentElement.scrollHeight,
      )
    : (page.viewportSize()?.height ?? 800);
  await page.screenshot({
    path: join(SHOTS, `${name}.png`),
    fullPage: whole,
    clip: { x: 0, y: 0, width, height },
    caret: 'initial',
    scale: 'css',
  });
}

/**
 * What a person sees fits the screen: nothing runs past the viewport's right edge (tables scroll
 * in their own box), and every button of an open dialog is inside the viewport. At desktop width
 * no table needs its scroll box either.
 */
export async function checkFit(page: Page, name: string) {
  // The emulated screen's width: on a phone, innerWidth grows with content that overflows.
  const viewport = page.viewportSize()?.width ?? 0;
  const fit = await page.evaluate((viewport) => {
    // Runs in the page (this file is typed for Node, without the DOM's types).
    type Rect = { left: number; right: number; top: number; bottom: number; width: number; height: number };
    type El = {
      tagName: string;
      textContent: string | null;
      scrollWidth: number;
      clientWidth: number;
      getBoundingClientRect(): Rect;
      querySelectorAll(s: string): Iterable<El>;
    };
    const w = globalThis as unknown as {
      innerHeight: number;
      document: { documentElement: El; querySelectorAll(s: string): Iterable<El> };
    };
    const doc = w.document;
    const buttons: string[] = [];
    for (const dialog of doc.querySelectorAll('dialog[open]')) {
      for (const b of dialog.querySelectorAll('button, [role="button"], summary')) {
        const r = b.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.left < 0 || r.top < 0 || r.right > viewport + 0.5 || r.bottom > w.innerHeight + 0.5) {
          buttons.push(`${(b.textContent ?? '').trim()} at ${Math.round(r.left)},${Math.round(r.top)}`);
        }
      }
    }
    const wide = [...doc.querySelectorAll('.table-scroll')]
      .filter((e) => e.scrollWidth > e.clientWidth + 1)
      .map(
        (e) => `${[...e.querySelectorAll('caption')][0]?.textContent ?? 'table'}: ${e.scrollWidth} > ${e.clientWidth}`,
      );
    return {
      page: doc.documentElement.scrollWidth,
      viewport,
      buttons,
      wide,
      unwrapped: [...doc.querySelectorAll('table')].filter(
        (t) =>
          !(
            t as unknown as { parentElement: { classList: { contains(c: string): boolean } } }
          ).parentElement.classList.contains('table-scroll'),
      ).length,
    };
  }, viewport);
  expect(fit.page, `width of ${name}`).toBeLessThanOrEqual(fit.viewport);
  expect(fit.buttons, `dialog buttons of ${name} inside the screen`).toEqual([]);
  expect(fit.unwrapped, `tables of ${name} outside a .table-scroll`).toBe(0);
  if (fit.viewport >= 1024) expect(fit.wide, `tables of ${name} at ${fit.viewport} px`).toEqual([]);
}

/** No serious or critical accessibility violation on the page as it is now; it fits; and a screenshot of it. */
export async function check(page: Page, name: string) {
  await shot(page, name);
  expect(await seriousViolations(page), `accessibility of ${name}`).toEqual([]);
  await checkFit(page, name);
}

/** Signs in at `base` as `email` (the test password) and waits for the home page. */
export async function signIn(base: string, page: Page, email: string) {
  await page.goto(`${base}/dashboard`);
  await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // A sign-in lands on the organization's home page.
  await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard');
  await page.getByRole('link', { name: /open conversations?/ }).waitFor();
}
