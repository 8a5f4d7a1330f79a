// The browser of the e2e suites: Debian's chromium through playwright-core (never
// `playwright install`, which downloads its own), with the flags DEVELOPERS.md lists.
import { chromium } from 'playwright-core';

/** Starts headless Chromium (`CHROMIUM`, default /usr/bin/chromium), with `extraArgs`. */
export function launchChromium(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', ...extraArgs],
  });
}

/**
 * Records the page's uncaught errors (exceptions, wasm traps such as "unreachable") so a test can
 * fail on them: a widget that crashed while the page still looked right is a failure.
 * @param {import('playwright-core').Page} page
 * @returns {string[]} the messages, filled as they happen
 */
export function watchPageErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => {
    console.error('page error:', e.message);
    errors.push(e.message);
  });
  return errors;
}
