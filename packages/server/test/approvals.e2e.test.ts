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
import Database from 'better-sqlite3';
import { HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { PeopleDirectory } from '@gateway/runtime';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import type { McpAuthorizer, McpCaller } from '../src/calls/caller.js';
import type { NewApproval } from '../src/approvals/ports.js';
import { approvalMigrations, sqliteApprovals } from '../src/approvals/sqlite/index.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';
import { repositoryRoot } from '../../../test-support/cli.js';
import { rawModernCall } from './support/raw-modern-call.js';

/** The approval page's screenshots go to docs/ with GATEWAY_UPDATE_SCREENSHOTS=1 (as the console's do). */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

let workspace: Workspace;
let gateway: RunningGateway;
let audit: WebhookReceiver;
let base: string;
const headers = { authorization: 'Bearer client-token' };
let session = 'session-1';
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  audit = await startWebhookReceiver();
  workspace = await prepareWorkspace({
    configExtra: [
      'approvals:',
      '  expirySeconds: 120',
      'webhooks:',
      '  audit:',
      `    url: ${audit.url}`,
      '    secret: audit-webhook-secret',
    ].join('\n'),
  });
  workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET = newWebhookSecret();
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
  await audit?.close();
});

/**
 * The receipts of the current `session` written since `size` (the head), once `count` of them are in the database
 * (a late retry of an earlier test's client may add receipts of its own session meanwhile).
 */
async function receiptsSince(size: number, count: number): Promise<Array<Record<string, unknown>>> {
  const store = gateway.receipts!.store;
  const deadline = Date.now() + 5_000;
  for (;;) {
    const receipts: Array<Record<string, unknown>> = [];
    const head = await store.head();
    for (let index = size; index < head.size; index += 1) {
      const receipt = (await store.get(index)) as unknown as Record<string, unknown>;
      if (receipt.session === session) receipts.push(receipt);
    }
    if (receipts.length >= count || Date.now() > deadline) return receipts;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A call receipt as [tool, outcome, reason]; an approval's receipt as ['approval', decision, approver]. */
const outcomes = (receipts: Array<Record<string, unknown>>) =>
  receipts.map((receipt) => {
    const action = receipt.action as { decision: string; approver: string | null } | undefined;
    return action ? ['approval', action.decision, action.approver] : [receipt.tool, receipt.outcome, receipt.reason];
  });
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
    const receipts = outcomes(await receiptsSince(before, 4));
    expect(receipts.slice(0, 4)).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['approval', 'approved', 'alice'],
      ['get_order', 'allowed', null],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
    ]);
  });

  it('2026-07-28 raw: a forged requestState, or one of other arguments, is refused (-32602) and runs nothing', async () => {
    session = 'session-raw';
    const upstreamBefore = upstreamCalls();
    const first = await rawModernCall(gateway.mcpUrl, headers, 'get_order', { orderId: 'ord_1001' });
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const state = first.result!.requestState as string;
    const [elicitationId, request] = Object.entries(first.result!.inputRequests as Record<string, { params: { url: string } }>)[0]!;
    expect(await decide('alice', request.params.url, 'approve')).toBe(303);
    const inputResponses = { [elicitationId]: { action: 'accept' } };
    const [version, payload, tag] = state.split('.') as [string, string, string];
    const forged = `${version}.${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${tag}`;
    const retry = (requestState: string, orderId: string) =>
      rawModernCall(gateway.mcpUrl, headers, 'get_order', { orderId }, { inputResponses, requestState });
    expect((await retry(forged, 'ord_1001')).error?.code).toBe(-32602);
    // Approved for ord_1001: the state does not carry over to other arguments.
    expect((await retry(state, 'ord_1002')).error?.code).toBe(-32602);
    expect(upstreamCalls()).toBe(upstreamBefore);
    // The genuine retry runs the approved call, once.
    const retried = await retry(state, 'ord_1001');
    expect(retried.result?.resultType).toBe('complete');
    expect(upstreamCalls()).toBe(upstreamBefore + 1);
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
    expect(outcomes(await receiptsSince(before, 7))).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['approval', 'approved', 'alice'],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'allowed', null],
      ['approval', 'denied', 'alice'],
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
      expect(tooLong.status).toBe(414);
      expect(tooLong.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      const tooLongText = await tooLong.text();
      // The rule, not the input: the 5,000 characters do not come back.
      expect(JSON.parse(tooLongText)).toMatchObject({ code: 'REQUEST_PATH_INVALID', status: 414 });
      expect(tooLongText).not.toContain('x'.repeat(200));
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

describe('approvals receipted in the signed log and reported as events of their own type', () => {
  interface ApprovalEvent {
    type: string;
    subject?: string;
    data: { approval: string; decision: string; approver: string | null; tool: string; receipt: string };
  }
  /** The approval events the audit receiver got, each with a valid Standard Webhooks signature. */
  const approvalEvents = (): ApprovalEvent[] =>
    audit.requests.flatMap((request) => {
      expect(
        new Webhook(workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET!).verify(request.body, request.headers as Record<string, string>),
      ).toBeTruthy();
      const event = HTTP.toEvent({ headers: request.headers, body: request.body }) as unknown as ApprovalEvent;
      return event.type === 'io.service.approval.receipted' ? [event] : [];
    });
  const idOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);

  it('approved, denied and expired: receipts naming the approver (the call names its approval), verified, evented', async () => {
    session = 'session-receipted';
    const before = (await gateway.receipts!.store.head()).size;
    const client = new LegacyClient({ name: 'v1-receipted', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    const pageOf = async (orderId: string) => {
      const thrown = (await client.callTool({ name: 'get_order', arguments: { orderId } }).then(
        () => undefined,
        (error: unknown) => error,
      )) as { data: { elicitations: Array<{ url: string }> } };
      return thrown.data.elicitations[0]!.url;
    };
    let approved: string, denied: string, expired: string;
    try {
      approved = await pageOf('ord_1001');
      expect(await decide('alice', approved, 'approve')).toBe(303);
      expect((await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } })).isError).toBeFalsy();
      denied = await pageOf('ord_1002');
      expect(await decide('alice', denied, 'deny')).toBe(303);
      expect((await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1002' } })).isError).toBe(true);
      // Nobody answers this one; its time runs out (the stored expiry moved back), and the retry finds it expired.
      expired = await pageOf('ord_1003');
      const database = new Database(join(workspace.directory, '.gateway', 'gateway.db'));
      try {
        expect(database.prepare('UPDATE approvals SET expires_at = ? WHERE id = ?').run(Date.now() - 1, idOf(expired)).changes).toBe(1);
      } finally {
        database.close();
      }
      expect(await pageOf('ord_1003')).not.toBe(expired);
    } finally {
      await client.close();
    }
    const receipts = await receiptsSince(before, 9);
    expect(outcomes(receipts)).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['approval', 'approved', 'alice'],
      ['get_order', 'allowed', null],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['approval', 'denied', 'alice'],
      ['get_order', 'denied', 'CALL_APPROVAL_DENIED'],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['approval', 'expired', null],
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
    ]);
    const [, approval, call, , denial, , , expiry] = receipts;
    expect(approval).toMatchObject({
      session: 'session-receipted',
      person: 'local:alice',
      tool: 'get_order',
      outcome: 'allowed',
      action: { kind: 'approval', approval: idOf(approved), decision: 'approved', approver: 'alice' },
    });
    // The call that ran names the approval it ran on; a call without one carries no such field.
    expect(call!.approval).toBe(idOf(approved));
    expect(receipts.filter((receipt) => 'approval' in receipt)).toEqual([call]);
    expect(denial).toMatchObject({
      outcome: 'denied',
      reason: 'CALL_APPROVAL_DENIED',
      action: { approval: idOf(denied), decision: 'denied' },
    });
    expect(expiry).toMatchObject({
      outcome: 'denied',
      reason: 'CALL_APPROVAL_EXPIRED',
      action: { approval: idOf(expired), approver: null },
    });
    // The approval's argumentsDigest is the call's: the receipt binds the decision to those very arguments.
    expect(approval!.argumentsDigest).toBe(call!.argumentsDigest);

    // The signed log covers them: `gateway receipts verify` on the running gateway's SQLite file.
    const verified = JSON.parse(await workspace.cli(['receipts', 'verify', '--json'])) as { ok: boolean; size?: number };
    expect(verified.ok).toBe(true);

    // Each is delivered to the webhook receiver as its own, signed event type.
    await waitFor(() => approvalEvents().length >= 3, 'three approval events');
    expect(
      approvalEvents()
        .filter((event) => [approved, denied, expired].map(idOf).includes(event.data.approval))
        .map((event) => [event.subject, event.data]),
    ).toEqual([
      [
        'session-receipted',
        { approval: idOf(approved), decision: 'approved', approver: 'alice', tool: 'get_order', receipt: approval!.id },
      ],
      ['session-receipted', { approval: idOf(denied), decision: 'denied', approver: 'alice', tool: 'get_order', receipt: denial!.id }],
      ['session-receipted', { approval: idOf(expired), decision: 'expired', approver: null, tool: 'get_order', receipt: expiry!.id }],
    ]);
  });
});
