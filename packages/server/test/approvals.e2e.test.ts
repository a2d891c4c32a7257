/**
 * One-call approvals end to end (docs/approvals.md › At call time): a real gateway on loopback with the orders
 * API upstream, `get_order` reviewed `approval: each-call` and published; SDK clients of both eras. A call asks
 * for an approval (2026-07-28: `input_required` with the approval page's URL; 2025-11-25: -32042); a person signs
 * in over HTTP with cookies (sent from the page to the sign-in and back) and approves; the retry runs the call
 * upstream exactly once; the next call asks again; other arguments are another approval; a denied one answers
 * CALL_APPROVAL_DENIED; someone else gets 403. Every answer is receipted.
 */
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PeopleDirectory } from '@gateway/runtime';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import type { McpAuthorizer, McpCaller } from '../src/calls/caller.js';
import type { NewApproval } from '../src/approvals/ports.js';
import { approvalMigrations, sqliteApprovals } from '../src/approvals/sqlite/index.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { repositoryRoot } from '../../../test-support/cli.js';

/** The approval page's screenshots go to docs/ with GATEWAY_UPDATE_SCREENSHOTS=1 (as the console's do). */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

let workspace: Workspace;
let gateway: RunningGateway;
let base: string;
const headers = { authorization: 'Bearer client-token' };
let session = 'session-1';
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  workspace = await prepareWorkspace({ configExtra: 'approvals:\n  expirySeconds: 120' });
  await workspace.cli(['import', 'orders']);
  await workspace.cli(['review', 'orders', '--all-supported', '--each-call', 'get_order', '--no-interactive']);
  await workspace.cli(['publish', 'orders', '--key', workspace.privateKeyPath, '--publisher', 'harness@example.com']);
  const people = new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json'));
  await people.add('alice', PASSWORD);
  await people.add('mallory', PASSWORD);
  const authorizer = ({ registry }: { registry: RunningGateway['registry'] }): McpAuthorizer => ({
    async authenticate() {
      const snapshot = registry.snapshot();
      const tools = new Map<string, string>();
      for (const name of snapshot.names) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
      const caller: McpCaller = {
        sessionId: session,
        subject: 'local:alice',
        clientId: 'client-approvals',
        tools,
        logins: new Set(['orders/api_key']),
        expiresAt: Date.now() + 3_600_000,
      };
      return { ok: true, caller };
    },
    sessionState: () => 'open',
  });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: authorizer,
  });
  base = `http://127.0.0.1:${workspace.port}`;
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
});

/** The receipts written since `size` (the head), once they are in the database. */
async function receiptsSince(size: number, count: number): Promise<Array<Record<string, unknown>>> {
  const store = gateway.receipts!.store;
  const deadline = Date.now() + 5_000;
  while ((await store.head()).size < size + count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const receipts: Array<Record<string, unknown>> = [];
  const head = await store.head();
  for (let index = size; index < head.size; index += 1) receipts.push((await store.get(index)) as unknown as Record<string, unknown>);
  return receipts;
}

const outcomes = (receipts: Array<Record<string, unknown>>) => receipts.map((receipt) => [receipt.tool, receipt.outcome, receipt.reason]);
const csrfOf = (page: string) => /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!;
const upstreamCalls = () => workspace.api.requests.filter((request) => request.path.startsWith('/orders/')).length;

/** A browser (one cookie jar) of a person: opening the approval page sends it to sign in, and back. */
async function signIn(name: string, approvalUrl: string): Promise<string> {
  const opened = await fetch(approvalUrl, { redirect: 'manual' });
  expect(opened.status).toBe(303);
  const signInUrl = new URL(opened.headers.get('location')!, base);
  expect(signInUrl.pathname).toBe('/signin');
  const signInPage = await fetch(signInUrl, { redirect: 'manual' });
  expect(signInPage.status).toBe(200);
  let cookie = cookieOf(signInPage);
  const form = new URLSearchParams({
    csrf_token: csrfOf(await signInPage.text()),
    next: signInUrl.searchParams.get('next')!,
    name,
    password: PASSWORD,
  });
  const signedIn = await fetch(`${base}/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  expect(signedIn.status).toBe(303);
  expect(signedIn.headers.get('location')).toBe(new URL(approvalUrl).pathname);
  cookie = cookieOf(signedIn);
  return cookie;
}

/** Signs `name` in and answers the approval page; the page's status after. */
async function decide(name: string, approvalUrl: string, decision: 'approve' | 'deny'): Promise<number> {
  const cookie = await signIn(name, approvalUrl);
  const page = await fetch(approvalUrl, { headers: { cookie } });
  if (page.status !== 200) return page.status;
  const text = await page.text();
  expect(text).toContain('get_order');
  expect(text).toContain('GET /orders/{orderId}');
  expect(text).toMatch(/ord_100[12]/);
  const posted = await fetch(approvalUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf_token: csrfOf(text), decision }).toString(),
  });
  return posted.status;
}

describe('one-call approvals', () => {
  it('2026-07-28: input_required with the approval page; approved, the retry runs upstream once; the next call asks again', async () => {
    session = 'session-modern';
    const before = (await gateway.receipts!.store.head()).size;
    const client = new Client(
      { name: 'v2-approvals', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { url: {} } } },
    );
    const elicited: string[] = [];
    let answer: 'approve' | 'none' = 'approve';
    client.setRequestHandler('elicitation/create', async (request) => {
      const url = (request.params as { url: string }).url;
      elicited.push(url);
      if (answer === 'approve') {
        // Someone else may not decide; the session's own person may.
        expect(await decide('mallory', url, 'approve')).toBe(403);
        expect(await decide('alice', url, 'approve')).toBe(303);
      }
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    try {
      const upstreamBefore = upstreamCalls();
      const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
      expect(result.isError).toBeFalsy();
      expect(upstreamCalls()).toBe(upstreamBefore + 1);
      expect(elicited).toHaveLength(1);
      expect(elicited[0]).toMatch(new RegExp(`^${base}/approvals/approval-[A-Za-z0-9_-]+$`));

      // The approval was used: the same call again asks for a new one (the person does not answer this time).
      answer = 'none';
      const again = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }).then(
        (value) => value,
        (thrown: unknown) => thrown,
      );
      expect(again).toBeDefined();
      expect(elicited.length).toBeGreaterThanOrEqual(2);
      expect(elicited[1]).not.toBe(elicited[0]);
      expect(upstreamCalls()).toBe(upstreamBefore + 1);
    } finally {
      await client.close();
    }
    const receipts = outcomes(await receiptsSince(before, 3));
    expect(receipts.slice(0, 3)).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'allowed', null],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
    ]);
  });

  it('2025-11-25 (SDK v1): -32042 names the page; other arguments are another approval; denied: CALL_APPROVAL_DENIED', async () => {
    session = 'session-legacy';
    const before = (await gateway.receipts!.store.head()).size;
    const client = new LegacyClient({ name: 'v1-approvals', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    const refusal = async (orderId: string) =>
      (await client.callTool({ name: 'get_order', arguments: { orderId } }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as { code: number; data: { elicitations: Array<{ mode: string; url: string }> } } | undefined;
    try {
      const upstreamBefore = upstreamCalls();
      const first = await refusal('ord_1001');
      expect(first?.code).toBe(-32042);
      const url = first!.data.elicitations[0]!.url;
      expect(url).toMatch(new RegExp(`^${base}/approvals/approval-`));
      // Asked again before anyone answered: the same page, still waiting.
      expect((await refusal('ord_1001'))!.data.elicitations[0]!.url).toBe(url);
      expect(await decide('alice', url, 'approve')).toBe(303);
      // Other arguments are not what the person approved: another approval.
      const other = await refusal('ord_1002');
      expect(other?.code).toBe(-32042);
      expect(other!.data.elicitations[0]!.url).not.toBe(url);
      expect(upstreamCalls()).toBe(upstreamBefore);
      // The approved call runs, once.
      expect((await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } })).isError).toBeFalsy();
      expect(upstreamCalls()).toBe(upstreamBefore + 1);
      // Denied: the call is refused, and never runs.
      expect(await decide('alice', other!.data.elicitations[0]!.url, 'deny')).toBe(303);
      const denied = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1002' } });
      expect(denied.isError).toBe(true);
      expect(JSON.stringify(denied.content)).toContain('denied');
      expect(upstreamCalls()).toBe(upstreamBefore + 1);
    } finally {
      await client.close();
    }
    expect(outcomes(await receiptsSince(before, 5))).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'allowed', null],
      ['get_order', 'denied', 'CALL_APPROVAL_DENIED'],
    ]);
  });

  it('in a browser (Chromium): the page sends a visitor to sign in and back, is accessible (axe) at 390 px too, and approves', async () => {
    session = 'session-browser';
    const client = new LegacyClient({ name: 'v1-browser', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
    try {
      const refused = (await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1003' } }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as { data: { elicitations: Array<{ url: string }> } };
      const url = refused.data.elicitations[0]!.url;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(url);
      expect(new URL(page.url()).pathname).toBe('/signin');
      await page.fill('#name', 'alice');
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(url), page.click('button[type="submit"]')]);
      expect(await page.locator('h1').innerText()).toBe('Approve a call of get_order?');
      expect(await page.locator('pre').innerText()).toContain('"orderId": "ord_1003"');
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'approval-desktop.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'approval-narrow.png'), fullPage: true });
      await Promise.all([page.waitForURL(url), page.click('button[value="approve"]')]);
      expect(await page.locator('.badge').innerText()).toContain('approved');
      expect(await page.locator('form').count()).toBe(0);
      expect((await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1003' } })).isError).toBeFalsy();
    } finally {
      await browser.close();
      await client.close();
    }
  });
});

describe('hostile input on the approval page', () => {
  it('an unknown, odd or long id, another’s approval, no CSRF token, a decided or expired one: refused, nothing changes', async () => {
    const database = openDatabase(join(workspace.directory, '.gateway', 'gateway.db'), approvalMigrations);
    const store = sqliteApprovals(database);
    try {
      const now = Date.now();
      const call = (digest: string, overrides: Partial<NewApproval> = {}): NewApproval => ({
        sessionId: 'session-hostile',
        tool: 'get_order',
        fingerprint: 'sha256:hostile',
        argumentsDigest: `hmac-sha256:${digest}`,
        subject: 'local:alice',
        personName: 'alice',
        clientId: 'client-approvals',
        clientName: 'Hostile test',
        source: 'orders',
        target: 'GET /orders/{orderId}',
        argumentsPreview: '{"orderId":"ord_1001"}',
        approvers: null,
        expiresAt: now + 600_000,
        ...overrides,
      });
      const mallorys = await store.request(
        call('mallory', { sessionId: 'session-of-mallory', subject: 'local:mallory', personName: 'mallory' }),
        now,
      );
      const decided = await store.request(call('decided'), now);
      await store.decide(decided.id, 'denied', 'alice', now);
      const expired = await store.request(call('expired', { expiresAt: now - 1_000 }), now - 60_000);
      const waiting = await store.request(call('waiting'), now);
      const snapshot = async () => JSON.stringify(await store.list({ limit: 1_000 }, now + 1));
      const before = await snapshot();

      const cookie = await signIn('alice', `${base}/approvals/${waiting.id}`);
      const csrf = csrfOf(await (await fetch(`${base}/approvals/${waiting.id}`, { headers: { cookie } })).text());
      const open = (id: string) => fetch(`${base}/approvals/${encodeURIComponent(id)}`, { headers: { cookie }, redirect: 'manual' });
      const post = (id: string, form: Record<string, string>) =>
        fetch(`${base}/approvals/${encodeURIComponent(id)}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form).toString(),
        });
      const answer = async (response: Response) => [response.status, /<h1>([^<]*)<\/h1>/.exec(await response.text())?.[1]];

      const odd = [
        'approval-unknown',
        `approval-${'x'.repeat(90)}`,
        `approval-${'x'.repeat(5_000)}`,
        '../admin/status',
        '<script>alert(1)</script>',
        'approval-\u0000\u202E',
        `${waiting.id} `,
        waiting.id.toUpperCase(),
      ];
      for (const id of odd) {
        // An id longer than the router reads (100 characters) is refused before any handler: 414 URI Too Long.
        const refusal = encodeURIComponent(id).length > 100 ? 414 : 404;
        const [status, title] = await answer(await open(id));
        expect([id.slice(0, 40), status]).toEqual([id.slice(0, 40), refusal]);
        if (refusal === 404) expect(title).toBe('No such approval');
        const [postStatus] = await answer(await post(id, { csrf_token: csrf, decision: 'approve' }));
        expect([id.slice(0, 40), postStatus]).toEqual([id.slice(0, 40), refusal]);
      }
      const tooLong = await open(`approval-${'x'.repeat(5_000)}`);
      expect(tooLong.headers.get('content-type')).toMatch(/^application\/(problem\+)?json/);
      expect(await tooLong.text()).toContain('exceeding the max param length');
      expect(await (await open('<script>alert(1)</script>')).text()).not.toContain('<script>alert');
      // Another person's approval (another session): not alice's to read or decide.
      expect(await answer(await open(mallorys.id))).toEqual([403, 'Not yours to decide']);
      expect(await answer(await post(mallorys.id, { csrf_token: csrf, decision: 'approve' }))).toEqual([403, 'Not yours to decide']);
      // No CSRF token, another one, or one without the browser session's cookie.
      expect(await answer(await post(waiting.id, { decision: 'approve' }))).toEqual([403, 'The form has expired']);
      expect(await answer(await post(waiting.id, { csrf_token: `${csrf}x`, decision: 'approve' }))).toEqual([403, 'The form has expired']);
      const cookieless = await fetch(`${base}/approvals/${waiting.id}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf_token: csrf, decision: 'approve' }).toString(),
      });
      expect(await answer(cookieless)).toEqual([403, 'The form has expired']);
      // No decision, or another word for one.
      expect(await answer(await post(waiting.id, { csrf_token: csrf, decision: 'yes' }))).toEqual([400, 'Choose approve or deny']);
      // Already decided, or expired: 409, the decision stays as it was.
      expect(await answer(await post(decided.id, { csrf_token: csrf, decision: 'approve' }))).toEqual([409, 'Already decided']);
      expect(await answer(await post(expired.id, { csrf_token: csrf, decision: 'approve' }))).toEqual([409, 'Already decided']);
      expect(await snapshot()).toBe(before);
      expect(await store.find(waiting.id)).toMatchObject({ status: 'waiting', decidedBy: null });
    } finally {
      database.close();
    }
  });
});

const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/** Serious and critical axe-core violations of the page (injected through DevTools, so the page's CSP holds). */
async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string }>> {
  await page.evaluate(await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8'));
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string }>;
  };
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact }) => ({ id, impact }));
}
