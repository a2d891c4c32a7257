#!/usr/bin/env node
/**
 * A person at a browser, for `BROWSER=<this file>`: what MCP clients such as mcp-remote run (through xdg-open) to
 * open a URL. It opens the URL in a Chromium the test started (`CHROMIUM_TEST_CDP`, its DevTools endpoint; the
 * default context, so cookies last from one opening to the next, as in a person's browser) and goes through what
 * it meets, as `CHROMIUM_TEST_ACCOUNT` (oidc-provider's development sign-in and consent): the gateway's sign-in
 * (its OIDC button), its consent page (every tool and login offered, allowed), the connect page of a per-person
 * login, an approval page (approved). It stops once the page is none of those (an MCP client's redirect URI, a
 * "Connected" notice, an approved approval), prints that page's URL and heading and every URL the page went
 * through as JSON, and exits 0.
 *
 * `CHROMIUM_TEST_FRESH=1`: a new context (a browser where no one is signed in yet). `CHROMIUM_TEST_LOG`: a file
 * each step is appended to.
 */
import { appendFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const url = process.argv[2];
const endpoint = process.env.CHROMIUM_TEST_CDP;
const account = process.env.CHROMIUM_TEST_ACCOUNT ?? 'alice';
const note = (line) => {
  if (process.env.CHROMIUM_TEST_LOG) appendFileSync(process.env.CHROMIUM_TEST_LOG, `${new Date().toISOString()} ${line}\n`);
};
if (!url || !endpoint) {
  process.stderr.write('usage: CHROMIUM_TEST_CDP=<endpoint> chromium-browser.mjs <url>\n');
  process.exit(2);
}

/** One step on the page; false once there is nothing left to do. */
async function step(page) {
  const at = new URL(page.url());
  const path = at.pathname;
  note(`at ${page.url()}`);
  // oidc-provider's development interactions: sign in, then consent.
  if (path.startsWith('/interaction/')) {
    if (await page.locator('input[name="login"]').count()) {
      await page.fill('input[name="login"]', account);
      await page.fill('input[name="password"]', 'anything');
    }
    await leaveBy(page, () => page.click('button[type="submit"]'));
    return true;
  }
  if (path.endsWith('/signin')) {
    const oidc = page.locator('a.button[href*="/signin/oidc"]');
    if ((await oidc.count()) === 0) throw new Error(`no OIDC sign-in on ${page.url()}`);
    await leaveBy(page, () => oidc.first().click());
    return true;
  }
  if (path.endsWith('/connect') && (await page.locator('a.button[href*="/signin/oidc"]').count())) {
    await leaveBy(page, () => page.locator('a.button[href*="/signin/oidc"]').first().click());
    return true;
  }
  if (path.endsWith('/consent') && (await page.locator('button[value="allow"]').count())) {
    for (const box of await page.locator('input[type="checkbox"]').all()) if (!(await box.isChecked())) await box.check();
    await leaveBy(page, () => page.click('button[value="allow"]', { noWaitAfter: true }));
    return true;
  }
  if (path.includes('/approvals/') && (await page.locator('button[value="approve"]').count())) {
    await Promise.all([page.waitForLoadState('load'), page.click('button[value="approve"]')]);
    await page.waitForSelector('.badge');
    return false;
  }
  return false;
}

/** Acts, then waits until the page has gone elsewhere and loaded (a redirect URI without a listener counts). */
async function leaveBy(page, act) {
  const before = page.url();
  await Promise.all([page.waitForURL((next) => next.href !== before, { timeout: 15_000, waitUntil: 'commit' }), act()]);
  await page.waitForLoadState('load').catch(() => undefined);
}

const browser = await chromium.connectOverCDP(endpoint);
let context;
try {
  context = process.env.CHROMIUM_TEST_FRESH === '1' ? await browser.newContext() : browser.contexts()[0];
  const page = await context.newPage();
  const visited = [];
  // Every navigation request of the page, redirects included.
  page.on('request', (request) => {
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) visited.push(request.url());
  });
  await page.goto(url, { waitUntil: 'load' }).catch((error) => note(`goto: ${error.message}`));
  for (let steps = 0; steps < 12 && (await step(page)); steps += 1);
  const heading = await page
    .locator('h1')
    .first()
    .innerText({ timeout: 2_000 })
    .catch(() => '');
  note(`done at ${page.url()}: ${heading}`);
  process.stdout.write(`${JSON.stringify({ url: page.url(), heading, visited })}\n`);
  await page.close();
} catch (error) {
  note(`failed: ${error.stack ?? error}`);
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  if (context && process.env.CHROMIUM_TEST_FRESH === '1') await context.close();
  await browser.close();
}
