/**
 * The publication model as a person meets it, with the real gateway on a loopback port, the `gateway` binary as a
 * subprocess on real files, Chromium on the consent page and an MCP SDK client:
 *
 * - an in-use publication keeps, signed, what it does not offer and why (an unsupported operation, one left out in
 *   review): tools.lock, `gateway verify` (a tampered reason fails) and `gateway status` show them;
 * - a changed description is a proposed publication at once: the server numbers it as the lock will, says in words
 *   what changed, counts added operations as drift, and `gateway import` then writes that same publication;
 * - a description changed, imported, reviewed and published at once never blocks what was just published: a client
 *   approving right after the reload gets the new tool and calls it;
 * - a tool blocked by drift is on the consent page, unselectable, with its reason.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { pino } from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { parseLock, type AdminStatus, type Publication } from '@gateway/core';
import { PeopleDirectory } from '@gateway/runtime';
import { MemoryOAuthClientProvider } from '../../../test-support/oauth-client.js';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';

const PASSWORD = 'a long and careful passphrase';
/** Each test runs several CLI subprocesses, a browser and the server: generous, for a busy machine. */
const TEST_TIMEOUT_MS = 240_000;
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/** An operation whose input schema cannot compile (`enum: []`): imported as unsupported, INPUT_SCHEMA_INVALID. */
const UNSUPPORTED_OPERATION = `  /requests:
    get:
      operationId: GetRequests
      parameters:
        - name: kind
          in: query
          schema: { type: string, enum: [] }
      responses:
        '200':
          description: ok
`;

function addPaths(document: string, paths: string): string {
  return document.replace('\ncomponents:\n', `\n${paths}components:\n`);
}

let workspace: Workspace;
let gateway: RunningGateway;
let browser: Browser;
let callback: { server: Server; url: string };

async function lockText(): Promise<string> {
  return readFile(workspace.lockPath, 'utf8');
}

function inUse(text: string): Publication {
  const source = parseLock(text).sources.find((candidate) => candidate.name === 'orders')!;
  return source.publications.find((publication) => publication.status === 'in use') as Publication;
}

async function status(): Promise<AdminStatus> {
  return JSON.parse(await workspace.cli(['status', '--url', gateway.url, '--json'])) as AdminStatus;
}

beforeAll(async () => {
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('done'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  callback = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/callback` };
  // Drift on, with an interval far beyond the test: only reloads and the push trigger read the description.
  workspace = await prepareWorkspace({
    editDocument: (document) => addPaths(document, UNSUPPORTED_OPERATION),
    driftIntervalSeconds: 3_600,
  });
  // A person leaves delete_order out: a second publication of the same document, without it.
  await workspace.cli(['import', 'orders']);
  await workspace.cli(['review', 'orders', '--deselect', 'delete_order', '--no-interactive']);
  await workspace.cli(['publish', 'orders', '--key', workspace.privateKeyPath, '--publisher', 'harness@example.com']);
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add('alice', PASSWORD);
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await workspace?.cleanup();
  callback?.server.closeAllConnections();
  await new Promise((resolve) => callback?.server.close(resolve));
});

/** Signs in as alice in a fresh browser context and leaves the page on the consent form. */
async function consentPage(authorizationUrl: URL): Promise<{ page: Page; close(): Promise<void> }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(authorizationUrl.href);
  await page.fill('#name', 'alice');
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
  return { page, close: () => context.close() };
}

function sdkClient(): {
  provider: MemoryOAuthClientProvider;
  connect(): Promise<void>;
  transport(): StreamableHTTPClientTransport;
  client(): Client;
} {
  const provider = new MemoryOAuthClientProvider(callback.url, 'Lifecycle client');
  let transport: StreamableHTTPClientTransport;
  let client: Client;
  return {
    provider,
    async connect() {
      transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider as unknown as OAuthClientProvider });
      client = new Client({ name: 'lifecycle', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(transport);
    },
    transport: () => transport,
    client: () => client,
  };
}

describe('what an in-use publication does not offer', { timeout: TEST_TIMEOUT_MS }, () => {
  it('is recorded in tools.lock with its status and reason, signed (tampering fails verify), and shown by gateway status', async () => {
    const text = await lockText();
    const publication = inUse(text);
    expect(publication.operations.map((operation) => operation.tool).sort()).toEqual(['create_order', 'get_order', 'search_orders']);
    expect(publication.notOffered).toEqual([
      {
        tool: 'delete_order',
        operation: 'DELETE /orders/{orderId}',
        status: 'not selected',
        reason: null,
        fingerprint: expect.stringMatching(/^sha256:/),
      },
      {
        tool: 'get_requests',
        operation: 'GET /requests',
        status: 'unsupported',
        reason: { code: 'INPUT_SCHEMA_INVALID', message: expect.any(String) },
        fingerprint: expect.stringMatching(/^sha256:/),
      },
    ]);
    // Compact: no request shape for what is not a tool.
    expect(text).toMatch(
      new RegExp(
        String.raw`notOffered:\n\s+- tool: delete_order\n\s+operation: DELETE /orders/\{orderId\}\n` +
          String.raw`\s+status: not selected\n\s+reason: null\n\s+fingerprint: `,
      ),
    );

    const verified = await runGateway(['verify'], { cwd: workspace.directory, env: workspace.env });
    expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
    // Each edit of what is not offered breaks the signature: a changed reason, an entry removed.
    const tamperedPath = join(workspace.directory, 'tampered.lock');
    for (const tampered of [
      text.replace('code: INPUT_SCHEMA_INVALID', 'code: MEDIA_TYPE_UNSUPPORTED'),
      text.replace(/\n\s+- tool: delete_order\n\s+operation: [^\n]+\n\s+status: [^\n]+\n\s+reason: null\n\s+fingerprint: [^\n]+/, ''),
    ]) {
      expect(tampered).not.toBe(text);
      await writeFile(tamperedPath, tampered);
      const result = await runGateway(['verify', '--lock', tamperedPath, '--json'], { cwd: workspace.directory, env: workspace.env });
      expect(result.exitCode).toBe(6);
      const report = JSON.parse(result.stdout) as { problems: Array<{ code: string; message: string }> };
      expect(report.problems.map((problem) => problem.code)).toEqual(['LOCK_SIGNATURE_INVALID']);
      expect(report.problems[0]!.message).toContain('does not offer');
    }

    const shown = await workspace.cli(['status', '--url', gateway.url]);
    expect(shown).toContain(`orders ${publication.id} does not offer 2 operations:`);
    expect(shown).toContain('delete_order (DELETE /orders/{orderId}): not selected');
    expect(shown).toMatch(/get_requests \(GET \/requests\): unsupported, INPUT_SCHEMA_INVALID: /);
    expect((await status()).publications[0]!.notOffered?.map((entry) => entry.tool)).toEqual(['delete_order', 'get_requests']);
  });
});

describe('a changed description', { timeout: TEST_TIMEOUT_MS }, () => {
  it('is a proposed publication at once: numbered by the server, counted as drift, and written by import with that number', async () => {
    const lastPublication = parseLock(await lockText()).lastPublication;
    const document = await readFile(workspace.documentPath, 'utf8');
    await writeFile(
      workspace.documentPath,
      document.replace(
        '    delete:\n      operationId: deleteOrder',
        '    put:\n      operationId: replaceOrder\n      summary: Replace an order\n' +
          "      responses:\n        '200':\n          description: ok\n" +
          '    delete:\n      operationId: deleteOrder',
      ),
    );
    await workspace.cli(['drift', 'check', 'orders', '--url', gateway.url]);
    const drift = (await status()).drift.find((source) => source.source === 'orders')!;
    // An operation added upstream is drift (nothing to block, but a proposal waits for a person).
    expect(drift.status).toBe('drifted');
    expect(drift.blockedTools).toEqual([]);
    expect(drift.proposal).toMatchObject({
      id: `publication-${lastPublication + 1}`,
      added: ['replace_order'],
      changed: [],
      removed: [],
      summary: ['added replace_order (PUT /orders/{orderId}): new in the live description'],
      toolCount: 3,
    });
    const shown = await workspace.cli(['status', '--url', gateway.url]);
    expect(shown).toContain(`orders: drifted`);
    expect(shown).toContain(`publication-${lastPublication + 1} (proposed)`);
    expect(shown).toContain('added replace_order (PUT /orders/{orderId}): new in the live description');

    // The diff agrees, and import writes the very proposal the server announced.
    const diff = JSON.parse(await workspace.cli(['diff', '--json'])) as {
      sources: Array<{ added: Array<{ tool: string }>; unpublished: Array<{ tool: string }> }>;
    };
    expect(diff.sources[0]!.added.map((operation) => operation.tool)).toEqual(['replace_order']);
    expect(diff.sources[0]!.unpublished.map((operation) => operation.tool)).toEqual(['delete_order', 'get_requests']);
    await workspace.cli(['import', 'orders']);
    const lock = parseLock(await lockText());
    const proposal = lock.sources[0]!.publications.find((publication) => publication.status === 'proposed')!;
    expect(proposal.id).toBe(drift.proposal!.id);
    expect(proposal.documentDigest).toBe(drift.proposal!.digest);
    expect(proposal.toolCount).toBe(drift.proposal!.toolCount);
  });

  it('imported, reviewed and published at once, never blocks what was just published: a client approving then calls it', async () => {
    // Changed again after the last check read it: the server has not seen this version.
    const document = await readFile(workspace.documentPath, 'utf8');
    await writeFile(
      workspace.documentPath,
      addPaths(
        document,
        `  /orders/{orderId}/notes:
    get:
      operationId: listOrderNotes
      summary: List an order's notes
      parameters:
        - name: orderId
          in: path
          required: true
          schema: { type: string }
      responses:
        '200':
          description: ok
`,
      ),
    );
    await workspace.cli(['import', 'orders']);
    await workspace.cli(['review', 'orders', '--select', 'list_order_notes', 'replace_order', '--no-interactive']);
    await workspace.cli(['publish', 'orders', '--key', workspace.privateKeyPath, '--publisher', 'harness@example.com']);
    const outcome = await gateway.reloadLock();
    expect(['swapped', 'unchanged']).toContain(outcome.status);
    expect(gateway.registry.snapshot().tools.has('list_order_notes')).toBe(true);
    expect([...gateway.registry.blockedTools().keys()]).toEqual([]);

    // A person approves a client right away: the new tool is offered and ticked like any other.
    const client = sdkClient();
    await expect(client.connect()).rejects.toThrow();
    const consent = await consentPage(client.provider.authorizationUrl!);
    try {
      const box = consent.page.locator('input[name="tool"][value="list_order_notes"]');
      expect(await box.isDisabled()).toBe(false);
      await box.check();
      await Promise.all([consent.page.waitForURL((url) => url.href.startsWith(callback.url)), consent.page.click('button[value="allow"]')]);
      await client.transport().finishAuth(new URL(consent.page.url()).searchParams);
    } finally {
      await consent.close();
    }
    await client.connect();
    try {
      const listed = await client.client().listTools();
      expect(listed.tools.map((tool) => tool.name)).toEqual(['list_order_notes']);
      const before = workspace.api.requests.length;
      const result = (await client.client().callTool({ name: 'list_order_notes', arguments: { orderId: 'ord_1001' } })) as {
        content: Array<{ text?: string }>;
      };
      expect(JSON.stringify(result.content)).not.toMatch(/Unknown tool|not in this session|blocked/i);
      // It reached the upstream (which has no such route): the gateway let the call through.
      expect(workspace.api.requests.slice(before).map((request) => `${request.method} ${request.path}`)).toContain(
        'GET /orders/ord_1001/notes',
      );
    } finally {
      await client.client().close();
    }
    expect((await status()).drift.find((source) => source.source === 'orders')).toMatchObject({ status: 'in-sync', blockedTools: [] });
  });

  it('blocks a changed tool, which the consent page shows unselectable with its reason', async () => {
    const document = await readFile(workspace.documentPath, 'utf8');
    try {
      await writeFile(
        workspace.documentPath,
        document.replace("pattern: '^ord_[0-9]+$'", () => "pattern: '^ord_[0-9a-z]+$'"),
      );
      await workspace.cli(['drift', 'check', 'orders', '--url', gateway.url]);
      const reason = gateway.registry.blockedReason('orders', 'get_order');
      expect(reason).toMatch(/^operation changed in the live description/);

      const client = sdkClient();
      await expect(client.connect()).rejects.toThrow();
      const consent = await consentPage(client.provider.authorizationUrl!);
      try {
        const option = consent.page.locator('.option', { has: consent.page.locator('input[name="tool"][value="get_order"]') });
        expect(await option.locator('input[name="tool"]').isDisabled()).toBe(true);
        expect(await option.locator('.blocked-reason').innerText()).toBe(`Cannot be approved now: ${reason}.`);
        // The other tools stay choosable.
        expect(await consent.page.locator('input[name="tool"][value="search_orders"]').isDisabled()).toBe(false);
      } finally {
        await consent.close();
      }
    } finally {
      await writeFile(workspace.documentPath, document);
      await workspace.cli(['drift', 'check', 'orders', '--url', gateway.url]);
    }
    expect(gateway.registry.blockedReason('orders', 'get_order')).toBeUndefined();
  });
});
