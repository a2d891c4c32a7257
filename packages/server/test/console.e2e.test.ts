/**
 * The operator console on a real gateway on 127.0.0.1 (startGateway, its own sign-in and consent, webhook
 * receivers on loopback): who may open it (operators only, signed in through the gateway's sign-in page, brought
 * back to the page they asked for), the CSRF token every form must carry, a revocation that /mcp enforces at
 * once, a paused endpoint resumed, and every page in Chromium with an axe-core audit and screenshots at desktop
 * width and 390 px (kept in docs/; refresh them with GATEWAY_UPDATE_SCREENSHOTS=1).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HTTP } from 'cloudevents';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { chromium, type Browser as Chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeopleDirectory } from '@gateway/runtime';
import { repositoryRoot } from '../../../test-support/cli.js';
import type { ApprovalRecord, Approvals, NewApproval } from '../src/approvals/ports.js';
import { approvalMigrations, sqliteApprovals } from '../src/approvals/sqlite/index.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { openDatabase, type SqliteDatabase } from '../src/store/sqlite/database.js';
import { approve, Browser, hiddenField, PERSON, pkce, registerClient, tokenRequest } from './oauth-support/authorization-server.js';
import { HARNESS_ADMIN_TOKEN, prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const OPERATOR = { name: 'olga', password: 'an operator passphrase of length' };
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

let workspace: Workspace;
let gateway: RunningGateway;
let audit: WebhookReceiver;
let siem: WebhookReceiver;
let chromiumBrowser: Chromium;
let people: PeopleDirectory;
let axeSource: string;
/** The gateway's approvals through a second connection to its SQLite file (as another worker process would). */
let approvalsDatabase: SqliteDatabase;
let approvals: Approvals;
/** Seeded approvals: waiting (for operators), approved and used, denied, expired unanswered. */
let seeded: Record<'waiting' | 'used' | 'denied' | 'expired', ApprovalRecord>;

beforeAll(async () => {
  audit = await startWebhookReceiver();
  let isSiemDown = true;
  siem = await startWebhookReceiver(() => ({ status: isSiemDown ? 500 : 204 }));
  workspace = await prepareWorkspace({
    configExtra: [
      'webhooks:',
      '  audit:',
      `    url: ${audit.url}`,
      '    secret: audit-webhook-secret',
      '  siem:',
      `    url: ${siem.url}`,
      '    secret: siem-webhook-secret',
      '    retry: { attempts: 1, initialDelayMs: 10, maxDelayMs: 20, timeoutMs: 2000 }',
    ].join('\n'),
  });
  // A new publication in which every create_order call waits for an operator's approval (shown on Sources).
  await writeFile(workspace.documentPath, `${await readFile(workspace.documentPath, 'utf8')}\n# reviewed again\n`);
  await workspace.cli(['import', 'orders']);
  await workspace.cli([
    'review',
    'orders',
    '--all-supported',
    '--each-call',
    'create_order',
    '--approvers',
    '@operators',
    '--no-interactive',
  ]);
  await workspace.cli(['publish', 'orders', '--key', workspace.privateKeyPath, '--publisher', 'harness@example.com']);
  workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET = newWebhookSecret();
  workspace.env.GATEWAY_SECRET_SIEM_WEBHOOK_SECRET = newWebhookSecret();
  people = new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json'));
  await people.add(PERSON.name, PERSON.password, { email: PERSON.email });
  await people.add(OPERATOR.name, OPERATOR.password, { roles: ['operator'] });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  // One call on a session of alice's: a receipt, an event delivered to audit, and siem paused at it.
  const token = await approvedToken();
  expect((await rpc('tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, token)).status).toBe(200);
  await waitFor(async () => (await endpointState('siem')) === 'paused', 'siem paused');
  isSiemDown = false;
  approvalsDatabase = openDatabase(join(workspace.directory, '.gateway', 'gateway.db'), approvalMigrations);
  approvals = sqliteApprovals(approvalsDatabase);
  seeded = await seedApprovals(approvals, sessionOf(token));
  chromiumBrowser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  axeSource = await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
}, 120_000);

afterAll(async () => {
  await chromiumBrowser?.close();
  approvalsDatabase?.close();
  await gateway?.close();
  await workspace?.cleanup();
  await audit?.close();
  await siem?.close();
});

/** create_order calls of alice's session in four states, and 55 older expired ones (more than a page). */
async function seedApprovals(store: Approvals, sessionId: string): Promise<typeof seeded> {
  const now = Date.now();
  const call = (orderId: string, overrides: Partial<NewApproval> = {}): NewApproval => ({
    sessionId,
    tool: 'create_order',
    fingerprint: 'sha256:seeded',
    argumentsDigest: `hmac-sha256:${orderId}`,
    subject: `local:${PERSON.name}`,
    personName: PERSON.name,
    clientId: 'client-seeded',
    clientName: 'Console test client',
    source: 'orders',
    target: 'POST /orders',
    argumentsPreview: JSON.stringify({ sku: orderId, quantity: 1 }),
    approvers: ['@operators'],
    expiresAt: now + 600_000,
    ...overrides,
  });
  for (let index = 0; index < 55; index += 1) {
    await store.request(call(`old-${index}`, { expiresAt: now - 3_600_000 }), now - 7_200_000 + index);
  }
  const expired = await store.request(call('sku-expired', { expiresAt: now - 60_000 }), now - 120_000);
  const denied = await store.request(call('sku-denied'), now - 50_000);
  await store.decide(denied.id, 'denied', OPERATOR.name, now - 40_000);
  const used = await store.request(call('sku-used'), now - 30_000);
  await store.decide(used.id, 'approved', OPERATOR.name, now - 20_000);
  await store.use(used.id, now - 10_000);
  const waiting = await store.request(call('sku-waiting'), now - 5_000);
  return { waiting, used, denied, expired };
}

async function admin<T>(path: string): Promise<T> {
  const response = await fetch(`${gateway.url}/admin${path}`, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

async function endpointState(name: string): Promise<string | undefined> {
  const { endpoints } = await admin<{ endpoints: Array<{ name: string; state: string }> }>('/webhooks');
  return endpoints.find((endpoint) => endpoint.name === name)?.state;
}

async function sessionAnswer(id: string): Promise<{ state: string; revokedReason?: string }> {
  return (await admin<{ session: { state: string; revokedReason?: string } }>(`/sessions/${id}`)).session;
}

/** alice approves two tools for a new client; the access token. */
async function approvedToken(): Promise<string> {
  const registered = await registerClient(gateway.url, { client_name: 'Console test client', redirect_uris: [REDIRECT_URI] });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    { issuer: gateway.url, mcpUrl: gateway.mcpUrl },
    { clientId, redirectUri: REDIRECT_URI, challenge, method: 'S256' },
    { tools: ['get_order', 'search_orders'], logins: ['orders/api_key'], lifetime: 3600 },
  );
  const tokens = await tokenRequest(gateway.url, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
  });
  expect(tokens.status).toBe(200);
  return tokens.body.access_token as string;
}

function sessionOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string }).sid;
}

function rpc(method: string, params: Record<string, unknown>, token: string): Promise<Response> {
  return fetch(gateway.mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

/** Opens /console in a fresh cookie jar, is sent to sign in, signs in and is brought back; the jar and the page. */
async function signedIn(person: { name: string; password: string }): Promise<{ browser: Browser; html: string }> {
  const browser = new Browser();
  const first = await browser.request(`${gateway.url}/console/sessions`);
  expect(first.status).toBe(303);
  const signInUrl = new URL(first.headers.get('location')!, gateway.url);
  expect(signInUrl.pathname).toBe('/signin');
  expect(signInUrl.searchParams.get('next')).toBe('/console/sessions');
  const signInPage = await browser.request(signInUrl.href);
  const signInHtml = await signInPage.text();
  const { response, url } = await browser.follow(`${gateway.url}/signin`, gateway.url, {
    form: { csrf_token: hiddenField(signInHtml, 'csrf_token'), next: hiddenField(signInHtml, 'next'), ...person },
  });
  expect(url).toBe(`${gateway.url}/console/sessions`);
  return { browser, html: await response.text() };
}

interface ConsoleEvent {
  type: string;
  subject?: string;
  data: { operator: string; action: string; target: string; receipt: string };
}

/** The console-action events `audit` received, each checked for a valid Standard Webhooks signature. */
function consoleEvents(): ConsoleEvent[] {
  return audit.requests.flatMap((request) => {
    expect(
      new Webhook(workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET!).verify(request.body, request.headers as Record<string, string>),
    ).toBeTruthy();
    const event = HTTP.toEvent({ headers: request.headers, body: request.body }) as unknown as ConsoleEvent;
    return event.type === 'io.service.console.receipted' ? [event] : [];
  });
}

/**
 * The console action's receipt in the log (operator, action, target), its event at the audit receiver, and the
 * signed log verified with it (`gateway receipts verify` on the running gateway's database).
 */
async function expectReceiptedAction(action: string, target: string, session: string | null): Promise<void> {
  const [receipt] = (await gateway.receipts!.store.list({ limit: 50, newestFirst: true })).filter(
    (candidate) => candidate.action?.kind === 'console' && candidate.action.action === action && candidate.action.target === target,
  );
  expect(receipt).toMatchObject({
    session,
    tool: '',
    outcome: 'allowed',
    action: { kind: 'console', action, operator: OPERATOR.name, target },
  });
  expect(receipt!.person).toMatch(/^local:/);
  await waitFor(() => consoleEvents().some((event) => event.data.receipt === receipt!.id), `the ${action} event`);
  expect(consoleEvents().find((event) => event.data.receipt === receipt!.id)!.data).toEqual({
    operator: OPERATOR.name,
    action,
    target,
    receipt: receipt!.id,
  });
  const verified = JSON.parse(await workspace.cli(['receipts', 'verify', '--json'])) as { ok: boolean };
  expect(verified.ok).toBe(true);
}

const CONSOLE_GETS = [
  '/console',
  '/console/sessions',
  '/console/receipts',
  '/console/receipts/receipt-0',
  '/console/webhooks',
  '/console/logins',
  '/console/approvals',
  '/console/approvals?state=expired&page=2',
];
const CONSOLE_POSTS = [
  '/console/sessions/session-1/revoke',
  '/console/webhooks/siem/resume',
  '/console/webhooks/audit/replay',
  '/console/logins/unlink',
];

describe('who may open the console', () => {
  it('a visitor not signed in is sent to sign in on every page, and refused on every form', async () => {
    for (const path of CONSOLE_GETS) {
      const response = await fetch(`${gateway.url}${path}`, { redirect: 'manual' });
      expect([path, response.status]).toEqual([path, 303]);
      expect(response.headers.get('location')).toBe(`/signin?next=${encodeURIComponent(path)}`);
    }
    for (const path of CONSOLE_POSTS) {
      const response = await fetch(`${gateway.url}${path}`, { method: 'POST', body: new URLSearchParams({ csrf_token: 'x' }) });
      expect([path, response.status]).toEqual([path, 403]);
    }
  });

  it('a signed-in person without the operator role gets 403 on every console route', async () => {
    const { browser, html } = await signedIn(PERSON);
    expect(html).toContain('Operators only');
    for (const path of CONSOLE_GETS) {
      const response = await browser.request(`${gateway.url}${path}`);
      expect([path, response.status]).toEqual([path, 403]);
      expect(await response.text()).toContain('does not have the operator role');
    }
    const opened = sessionOf(await approvedToken());
    for (const path of [
      `/console/sessions/${opened}/revoke`,
      '/console/webhooks/siem/resume',
      '/console/webhooks/audit/replay',
      '/console/logins/unlink',
    ]) {
      const response = await browser.request(`${gateway.url}${path}`, { form: { csrf_token: 'not-theirs' } });
      expect([path, response.status]).toEqual([path, 403]);
    }
    expect((await sessionAnswer(opened)).state).toBe('open');
  });

  it('taking the operator role away closes the console at once, in a browser already signed in', async () => {
    const oscar = { name: 'oscar', password: 'another operator passphrase' };
    await people.add(oscar.name, oscar.password, { roles: ['operator'] });
    const { browser } = await signedIn(oscar);
    expect((await browser.request(`${gateway.url}/console/webhooks`)).status).toBe(200);
    await people.setRoles(oscar.name, []);
    expect((await browser.request(`${gateway.url}/console/webhooks`)).status).toBe(403);
  });

  it('a sign-in return path off this gateway is not followed', async () => {
    const browser = new Browser();
    for (const next of ['https://evil.example/console', '//evil.example/console', '/\\evil.example']) {
      const response = await browser.request(`${gateway.url}/signin?next=${encodeURIComponent(next)}`);
      expect([next, response.status, response.headers.get('location')]).toEqual([next, 400, null]);
    }
  });
});

async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string; nodes: number }>> {
  await page.evaluate(axeSource);
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string; nodes: unknown[] }>;
  };
  return results.violations.map((violation) => ({ id: violation.id, impact: violation.impact, nodes: violation.nodes.length }));
}

describe('the console in Chromium', () => {
  const PAGES = [
    { name: 'sources', path: '/console' },
    { name: 'sessions', path: '/console/sessions' },
    { name: 'receipts', path: '/console/receipts' },
    { name: 'receipt', path: '/console/receipts/receipt-0' },
    { name: 'webhooks', path: '/console/webhooks' },
    // 59 approvals: the screenshot shows the first screenful, not the whole page of 50.
    { name: 'approvals', path: '/console/approvals', fullPage: false },
    // No per-person login is configured here: the page says so (oauth-person.e2e.test.ts shows one with links).
    { name: 'logins', path: '/console/logins', screenshot: false },
  ];

  it.each([
    { width: 1280, height: 900, suffix: 'desktop' },
    { width: 390, height: 844, suffix: 'narrow' },
  ])('at $suffix width: signs in, every page has 0 axe violations and no horizontal scrolling', async ({ width, height, suffix }) => {
    await approvedToken();
    const context = await chromiumBrowser.newContext({ viewport: { width, height } });
    try {
      const page = await context.newPage();
      await page.goto(`${gateway.url}/console`);
      expect(new URL(page.url()).pathname).toBe('/signin');
      await page.fill('#name', OPERATOR.name);
      await page.fill('#password', OPERATOR.password);
      await Promise.all([page.waitForURL(`${gateway.url}/console`), page.click('button[type="submit"]')]);
      for (const { name, path, screenshot, fullPage } of PAGES) {
        await page.goto(`${gateway.url}${path}`);
        expect(await page.locator('h1').innerText()).not.toBe('');
        expect([name, await axeViolations(page)]).toEqual([name, []]);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect([name, overflow]).toEqual([name, 0]);
        if (screenshot === false) continue;
        await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, `console-${name}-${suffix}.png`), fullPage: fullPage ?? true });
      }
    } finally {
      await context.close();
    }
  });
});

describe('an operator in the console', () => {
  it('sees each source with its publication, tool counts and approval choices; sessions; receipts; webhooks', async () => {
    const { browser, html: sessionsHtml } = await signedIn(OPERATOR);
    expect(sessionsHtml).toContain('Console test client');
    expect(sessionsHtml).toContain('get_order');
    const sources = await (await browser.request(`${gateway.url}/console`)).text();
    expect(sources).toMatch(/<code>publication-\d+<\/code>: \d+ tool\(s\) served/);
    expect(sources).toContain('<code>get_order</code>');
    expect(sources).toContain('GET /orders/{orderId}');
    expect(sources).toMatch(
      /<code>create_order<\/code>.*<span class="badge warn">each-call<\/span> <span class="hint">approved by @operators/s,
    );
    const receipts = await (await browser.request(`${gateway.url}/console/receipts?tool=get_order&outcome=allowed`)).text();
    expect(receipts).toContain('receipt-0');
    const none = await (await browser.request(`${gateway.url}/console/receipts?outcome=denied`)).text();
    expect(none).toContain('No receipt matches this search.');
    const receipt = await (await browser.request(`${gateway.url}/console/receipts/receipt-0`)).text();
    expect(receipt).toContain('hmac-sha256:');
    // Its inclusion proof against the signed checkpoint, checked by the page (core receiptProofHolds).
    expect(receipt).toContain('<span class="badge good">proof verified</span>');
    expect(receipt).toMatch(/receipt-0 is leaf 0 of the tree of\s+\d+ receipts/);
    expect(receipt).toMatch(/<pre>[^<]*\n\d+\n[A-Za-z0-9+/=]{44}\n/);
    // A search by time: the receipts of a window that holds them, none of a later one, and a clear word on a non-time.
    const today = new Date().toISOString().slice(0, 10);
    const inWindow = await (await browser.request(`${gateway.url}/console/receipts?since=${today}&until=2999-01-01T00:00`)).text();
    expect(inWindow).toContain('receipt-0');
    const later = await (await browser.request(`${gateway.url}/console/receipts?since=2999-01-01`)).text();
    expect(later).toContain('No receipt matches this search.');
    const notATime = await (await browser.request(`${gateway.url}/console/receipts?until=yesterday`)).text();
    expect(notATime).toContain('Until: not a time.');
    expect(notATime).not.toContain('receipt-0<');
    const webhooks = await (await browser.request(`${gateway.url}/console/webhooks`)).text();
    expect(webhooks).toMatch(/siem <span class="badge warn">paused<\/span>/);
    expect(webhooks).toMatch(/audit <span class="badge good">active<\/span>/);
  });

  it('revoking without the CSRF token is refused; with it the session is revoked and /mcp refuses its token', async () => {
    const token = await approvedToken();
    const id = sessionOf(token);
    expect((await rpc('tools/list', {}, token)).status).toBe(200);
    const { browser, html } = await signedIn(OPERATOR);
    const csrf = hiddenField(html, 'csrf_token');
    expect(html).toContain(`action="/console/sessions/${id}/revoke"`);

    expect((await browser.request(`${gateway.url}/console/sessions/${id}/revoke`, { form: { csrf_token: '' } })).status).toBe(403);
    expect((await browser.request(`${gateway.url}/console/sessions/${id}/revoke`, { form: { csrf_token: 'wrong' } })).status).toBe(403);
    expect((await rpc('tools/list', {}, token)).status).toBe(200);

    const revoked = await browser.request(`${gateway.url}/console/sessions/${id}/revoke`, { form: { csrf_token: csrf } });
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get('location')).toBe(`/console/sessions?revoked=${id}`);
    const after = await (await browser.request(`${gateway.url}/console/sessions?revoked=${id}`)).text();
    expect(after).toContain(`<p class="notice" role="status">${id} is revoked: its client&#39;s next call to /mcp is refused.</p>`);
    // A link cannot put words of its own on the console: a notice names only what the page shows.
    const forged = 'Your console is locked. Call +1 555 0100';
    for (const path of [
      `/console/sessions?revoked=${encodeURIComponent(forged)}`,
      `/console/webhooks?resumed=${encodeURIComponent(forged)}`,
      `/console/webhooks?replayed=${encodeURIComponent(forged)}`,
      `/console/logins?unlinked=${encodeURIComponent(forged)}&person=olga`,
    ]) {
      const page = await (await browser.request(`${gateway.url}${path}`)).text();
      expect(page).not.toContain('Your console is locked');
      expect(page).not.toContain('class="notice"');
    }
    expect((await rpc('tools/list', {}, token)).status).toBe(401);
    expect(await sessionAnswer(id)).toMatchObject({ state: 'revoked', revokedReason: 'revoked by olga in the console' });
    await expectReceiptedAction('session.revoke', id, id);
  });

  it('resumes a paused webhook endpoint with the CSRF token, not without', async () => {
    const { browser, html } = await signedIn(OPERATOR);
    const csrf = hiddenField(html, 'csrf_token');
    expect((await browser.request(`${gateway.url}/console/webhooks/siem/resume`, { form: { csrf_token: '' } })).status).toBe(403);
    expect(await endpointState('siem')).toBe('paused');
    const resumed = await browser.request(`${gateway.url}/console/webhooks/siem/resume`, { form: { csrf_token: csrf } });
    expect(resumed.status).toBe(303);
    const after = await (await browser.request(`${gateway.url}${resumed.headers.get('location')}`)).text();
    expect(after).toContain('<p class="notice" role="status">Delivery to siem goes on.</p>');
    await waitFor(async () => (await endpointState('siem')) === 'active', 'siem resumed');
    await expectReceiptedAction('webhook.resume', 'siem', null);
  });
  it("replays an endpoint's events from a sequence with the CSRF token, not without; not a sequence, nothing replayed", async () => {
    const { browser, html } = await signedIn(OPERATOR);
    const csrf = hiddenField(html, 'csrf_token');
    const page = await (await browser.request(`${gateway.url}/console/webhooks`)).text();
    expect(page).toContain('action="/console/webhooks/audit/replay"');
    const deliveriesOfFirst = () =>
      audit.requests.filter((request) => request.status === 204 && Number(JSON.parse(request.body).sequence) === 1).length;
    await waitFor(() => deliveriesOfFirst() >= 1, 'event 1 delivered to audit');
    const before = deliveriesOfFirst();
    expect((await browser.request(`${gateway.url}/console/webhooks/audit/replay`, { form: { csrf_token: '', from: '1' } })).status).toBe(
      403,
    );
    const refused = await browser.request(`${gateway.url}/console/webhooks/audit/replay`, { form: { csrf_token: csrf, from: '0x1' } });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('nothing was replayed');
    const unknown = await browser.request(`${gateway.url}/console/webhooks/nowhere/replay`, { form: { csrf_token: csrf, from: '1' } });
    expect(unknown.status).toBe(404);
    expect(deliveriesOfFirst()).toBe(before);
    const replayed = await browser.request(`${gateway.url}/console/webhooks/audit/replay`, { form: { csrf_token: csrf, from: '1' } });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toBe('/console/webhooks?replayed=audit');
    // Sent again, in order: event 1 reaches the receiver once more.
    await waitFor(() => deliveriesOfFirst() > before, 'event 1 delivered again');
    await expectReceiptedAction('webhook.replay', 'audit from 1', null);
  });
});

describe('the Approvals page', () => {
  const rowOf = (page: string, id: string) => {
    const row = page.split('<tr>').find((candidate) => candidate.includes(`/approvals/${id}"`));
    expect(row, `a row for ${id}`).toBeDefined();
    return row!;
  };

  it('lists waiting, decided and expired approvals newest first, with who decided and a link to the approval page', async () => {
    const { browser } = await signedIn(OPERATOR);
    const all = await (await browser.request(`${gateway.url}/console/approvals`)).text();
    const order = [seeded.waiting, seeded.used, seeded.denied, seeded.expired].map((record) => all.indexOf(`/approvals/${record.id}"`));
    expect(order.every((position) => position > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(rowOf(all, seeded.waiting.id)).toMatch(/<code>create_order<\/code>.*POST \/orders/s);
    expect(rowOf(all, seeded.waiting.id)).toContain(`<code>${seeded.waiting.sessionId}</code>`);
    expect(rowOf(all, seeded.waiting.id)).toContain('<td data-label="Person">alice</td>');
    expect(rowOf(all, seeded.waiting.id)).toContain('<td data-label="Client">Console test client</td>');
    expect(rowOf(all, seeded.waiting.id)).toContain('<span class="badge warn">waiting</span>');
    expect(rowOf(all, seeded.used.id)).toMatch(
      /<span class="badge good">used<\/span>.*approved by olga, <time datetime="[^"]+">.*; used <time/s,
    );
    expect(rowOf(all, seeded.denied.id)).toMatch(/<span class="badge bad">denied<\/span>.*denied by olga, <time/s);
    expect(rowOf(all, seeded.expired.id)).toMatch(/<span class="badge">expired<\/span>.*unanswered, expired <time/s);
    // 59 approvals: 50 on the first page, and a link to the older ones.
    expect(all.match(/<tr><td data-label="Asked">/g)).toHaveLength(50);
    expect(all).toContain('href="/console/approvals?state=all&#38;page=2">Older approvals</a>');

    const waiting = await (await browser.request(`${gateway.url}/console/approvals?state=waiting`)).text();
    expect(waiting.match(/<tr><td data-label="Asked">/g)).toHaveLength(1);
    expect(waiting).toContain(`/approvals/${seeded.waiting.id}"`);
    const decided = await (await browser.request(`${gateway.url}/console/approvals?state=decided`)).text();
    expect(decided.match(/<tr><td data-label="Asked">/g)).toHaveLength(2);
    const expired = await (await browser.request(`${gateway.url}/console/approvals?state=expired`)).text();
    expect(expired.match(/<tr><td data-label="Asked">/g)).toHaveLength(50);
    expect(expired).not.toContain(`/approvals/${seeded.waiting.id}"`);
    const olderExpired = await (await browser.request(`${gateway.url}/console/approvals?state=expired&page=2`)).text();
    expect(olderExpired.match(/<tr><td data-label="Asked">/g)).toHaveLength(6);
    expect(olderExpired).toContain('Newer approvals');
    expect(olderExpired).not.toContain('Older approvals');
    // An odd query reads as the first page of every approval; a page past the end says so.
    const odd = await browser.request(`${gateway.url}/console/approvals?state=%3Cscript%3E&page=-1`);
    expect(odd.status).toBe(200);
    expect(await odd.text()).not.toContain('<script>');
    expect(await (await browser.request(`${gateway.url}/console/approvals?page=999`)).text()).toContain('No approval on this page.');
  });

  it('its link opens the approval page, which an operator may answer for an @operators tool', async () => {
    const { browser } = await signedIn(OPERATOR);
    const page = await browser.request(`${gateway.url}/approvals/${seeded.waiting.id}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Approve a call of create_order?');
  });
});

describe('the Logins page without a per-person login configured', () => {
  it('says there is nothing to link; an unlink answers 404 with the CSRF token and 403 without', async () => {
    const { browser } = await signedIn(OPERATOR);
    const logins = await (await browser.request(`${gateway.url}/console/logins`)).text();
    expect(logins).toContain('No login of <code>type: oauthPerson</code> is configured');
    const csrf = hiddenField(await (await browser.request(`${gateway.url}/console/sessions`)).text(), 'csrf_token');
    const form = { person: 'local:alice', login: 'orders/api_key' };
    expect((await browser.request(`${gateway.url}/console/logins/unlink`, { form })).status).toBe(403);
    const unknown = await browser.request(`${gateway.url}/console/logins/unlink`, { form: { ...form, csrf_token: csrf } });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('local:alice has no link for orders/api_key: nothing changed.');
  });
});

describe('the consent page', () => {
  it('marks a tool reviewed `approval: each-call`, and only that one', async () => {
    const registered = await registerClient(gateway.url, { client_name: 'Consent mark client', redirect_uris: [REDIRECT_URI] });
    const { challenge } = pkce();
    let consent = '';
    await approve(
      { issuer: gateway.url, mcpUrl: gateway.mcpUrl },
      { clientId: registered.body.client_id as string, redirectUri: REDIRECT_URI, challenge, method: 'S256' },
      { tools: ['get_order'], logins: ['orders/api_key'], decision: 'deny', inspect: (html) => (consent = html) },
    );
    const option = (tool: string) => consent.slice(consent.indexOf(`value="${tool}"`)).split('<div class="option">')[0]!;
    expect(option('create_order')).toContain('<span class="mark each-call">each-call</span>');
    expect(option('create_order')).toContain('Each call waits for approval: it runs once an operator approves it on its approval page.');
    expect(option('get_order')).not.toContain('each-call');
  });
});
