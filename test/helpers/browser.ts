import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium (apt-get install -y chromium), or PARLEY_CHROMIUM. */
export const CHROMIUM = process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
/** In CI a missing browser fails the browser tests instead of skipping them. */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/** Headless chromium with no background traffic (this machine reaches no outside host). */
export function launchChromium(): Promise<Browser> {
  if (!HAVE_CHROMIUM) throw new Error(`chromium is missing at ${CHROMIUM}: CI must install it (.ci/run)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
