/**
 * End to end, both MCP eras, real clients and a real browser: the gateway (startGateway) over the example
 * orders API; the v2 SDK client identified by a Client ID Metadata Document served over HTTPS with a test
 * CA; the v1 SDK client registering dynamically. Chromium signs in, picks two tools, a login and a time
 * limit, and approves; the client finishes auth and is held to exactly that until the limit passes.
 */
import { createServer, type Server } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { MemoryOAuthClientProvider } from '../../../test-support/oauth-client.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { PeopleDirectory } from '@gateway/runtime';
import { ORDERS_API_KEY, prepareWorkspace, type Workspace } from './support/harness.js';
import {
  approve,
  makeTestCertificates,
  pkce,
  registerClient,
  startMetadataHost,
  tokenRequest,
} from './oauth-support/authorization-server.js';

const PASSWORD = 'a long and careful passphrase';
const LIFETIME_SECONDS = 10;
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let workspace: Workspace;
let gateway: RunningGateway;
let browser: Browser;
let metadataHost: Awaited<ReturnType<typeof startMetadataHost>>;
let callback: { server: Server; url: string };
let cleanupCertificates: () => Promise<void>;

beforeAll(async () => {
  const certificates = await temporaryDirectory('gateway-e2e-tls-');
  cleanupCertificates = certificates.cleanup;
  const tls = await makeTestCertificates(certificates.path);
  const caPath = join(certificates.path, 'ca.pem');
  await writeFile(caPath, tls.ca);
  metadataHost = await startMetadataHost(tls);

  const server = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  callback = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/callback` };

  workspace = await prepareWorkspace({
    configExtra: [
      'auth:',
      '  sessions:',
      `    lifetimeChoicesSeconds: [${LIFETIME_SECONDS}, 3600]`,
      '  clientMetadata:',
      `    caCertificates: [${caPath}]`,
    ].join('\n'),
  });
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add('alice', PASSWORD, { email: 'alice@example.com' });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await workspace?.cleanup();
  await metadataHost?.close();
  callback?.server.closeAllConnections();
  await new Promise((resolve) => callback?.server.close(resolve));
  await cleanupCertificates?.();
});

/** Chromium: sign in, tick the tools, the login and the time limit, press Allow; returns the callback query. */
async function approveInBrowser(
  authorizationUrl: URL,
  choice: { tools: string[]; login: string; lifetime: number },
): Promise<URLSearchParams> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(authorizationUrl.href);
    await page.fill('#name', 'alice');
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
    // Nothing is preselected: the person ticks exactly what the client gets.
    expect(await page.locator('input[name="tool"]:checked').count()).toBe(0);
    for (const tool of choice.tools) await page.check(`input[name="tool"][value="${tool}"]`);
    await page.check(`input[name="login"][value="${choice.login}"]`);
    await page.check(`input[name="lifetime"][value="${choice.lifetime}"]`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.click('button[value="allow"]')]);
    return new URL(page.url()).searchParams;
  } finally {
    await context.close();
  }
}

function toolNames(): string[] {
  return [...gateway.registry.snapshot().names];
}

async function waitUntil(epochMs: number): Promise<void> {
  const delay = epochMs - Date.now();
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
}

interface Connected {
  list(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: unknown[] }>;
  close(): Promise<void>;
}

describe.each([
  [
    '2026-07-28: SDK v2 client with a Client ID Metadata Document',
    async (): Promise<{ start(): Promise<URL>; finish(params: URLSearchParams): Promise<Connected>; clientId(): string }> => {
      const path = '/clients/e2e-modern.json';
      const clientId = `${metadataHost.origin}${path}`;
      metadataHost.documents.set(path, {
        body: JSON.stringify({
          client_id: clientId,
          client_name: 'E2E modern client',
          redirect_uris: [callback.url],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        }),
        headers: { 'cache-control': 'max-age=60' },
      });
      const provider = new MemoryOAuthClientProvider(callback.url, 'E2E modern client', clientId);
      const connect = async (): Promise<Connected> => {
        const client = new Client({ name: 'e2e-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider }));
        return {
          list: async () => (await client.listTools()).tools.map((tool) => tool.name),
          call: (name, args) => client.callTool({ name, arguments: args }) as never,
          close: () => client.close(),
        };
      };
      let transport: StreamableHTTPClientTransport;
      return {
        async start() {
          transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider });
          const client = new Client({ name: 'e2e-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
          await expect(client.connect(transport)).rejects.toThrow();
          return provider.authorizationUrl!;
        },
        async finish(params) {
          await transport.finishAuth(params);
          return connect();
        },
        clientId: () => clientId,
      };
    },
  ],
  [
    '2025-11-25: SDK v1 client with dynamic client registration',
    async (): Promise<{ start(): Promise<URL>; finish(params: URLSearchParams): Promise<Connected>; clientId(): string }> => {
      const provider = new MemoryOAuthClientProvider(callback.url, 'E2E legacy client');
      let transport: LegacyTransport;
      return {
        async start() {
          transport = new LegacyTransport(new URL(gateway.mcpUrl), { authProvider: provider });
          const client = new LegacyClient({ name: 'e2e-legacy', version: '1.0.0' });
          await expect(client.connect(transport)).rejects.toThrow();
          return provider.authorizationUrl!;
        },
        async finish(params) {
          await transport.finishAuth(params.get('code')!);
          const client = new LegacyClient({ name: 'e2e-legacy', version: '1.0.0' });
          await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { authProvider: provider }));
          return {
            list: async () => (await client.listTools()).tools.map((tool) => tool.name),
            call: (name, args) => client.callTool({ name, arguments: args }) as never,
            close: () => client.close(),
          };
        },
        clientId: () => (provider.clientInformation() as { client_id: string }).client_id,
      };
    },
  ],
] as const)('%s', (_label, makeClient) => {
  it('discovers, registers, is approved in the browser for 2 tools, and is held to them until the time limit', async () => {
    const names = toolNames();
    const search = names.find((name) => name.startsWith('search'))!;
    const get = names.find((name) => name.startsWith('get'))!;
    const remove = names.find((name) => name.startsWith('delete'))!;
    expect([search, get, remove].every(Boolean)).toBe(true);

    const flow = await makeClient();
    const authorizationUrl = await flow.start();
    // The client found the gateway's own authorization server and bound the request to /mcp.
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${gateway.url}/authorize`);
    expect(authorizationUrl.searchParams.get('resource')).toBe(gateway.mcpUrl);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const params = await approveInBrowser(authorizationUrl, { tools: [search, get], login: 'orders/api_key', lifetime: LIFETIME_SECONDS });
    expect(params.get('iss')).toBe(gateway.url);
    const approvedAt = Date.now();
    const client = await flow.finish(params);
    try {
      expect((await client.list()).sort()).toEqual([get, search].sort());

      const before = workspace.api.requests.length;
      const result = await client.call(search, {});
      expect(result.isError ?? false).toBe(false);
      const upstream = workspace.api.requests.at(-1)!;
      expect(workspace.api.requests.length).toBe(before + 1);
      expect(upstream.headers['x-api-key']).toBe(ORDERS_API_KEY);
      // The client's token never reaches the upstream (MCP › Token Passthrough).
      expect(upstream.headers.authorization).toBeUndefined();

      const third = await client.call(remove, { orderId: 'ord_1' }).then(
        (answer) => ({ refused: answer.isError === true, text: JSON.stringify(answer.content) }),
        (error: Error) => ({ refused: true, text: error.message }),
      );
      expect(third.refused).toBe(true);
      expect(workspace.api.requests.length).toBe(before + 1);

      // After the time limit every call is denied, and a refresh cannot extend the session.
      await waitUntil(approvedAt + LIFETIME_SECONDS * 1000 + 500);
      await expect(client.call(search, {})).rejects.toThrow();
      await expect(client.list()).rejects.toThrow();
      expect(workspace.api.requests.length).toBe(before + 1);
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});

describe('a session is bound to the fingerprints the person approved', () => {
  it('a tool whose operation changed after approval is refused; an unchanged one keeps working', async () => {
    const names = toolNames();
    const search = names.find((name) => name.startsWith('search'))!;
    const get = names.find((name) => name.startsWith('get'))!;
    const registered = await registerClient(gateway.url, { client_name: 'fingerprint test', redirect_uris: [callback.url] });
    const clientId = registered.body.client_id as string;
    const { verifier, challenge } = pkce();
    const location = await approve(
      { issuer: gateway.url, mcpUrl: gateway.mcpUrl },
      { clientId, redirectUri: callback.url, challenge, method: 'S256' },
      { tools: [search, get], logins: ['orders/api_key'], lifetime: 3600, password: PASSWORD },
    );
    const tokens = await tokenRequest(gateway.url, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: callback.url,
    });
    expect(tokens.status).toBe(200);
    const client = new LegacyClient({ name: 'fingerprint-test', version: '1.0.0' });
    await client.connect(
      new LegacyTransport(new URL(gateway.mcpUrl), {
        requestInit: { headers: { authorization: `Bearer ${tokens.body.access_token as string}` } },
      }),
    );
    try {
      expect(((await client.callTool({ name: search, arguments: {} })) as { isError?: boolean }).isError ?? false).toBe(false);
      // The search operation changes (its limit's maximum): a new fingerprint, published and loaded.
      await workspace.republish((document) => document.replace('maximum: 100', 'maximum: 50'));
      await gateway.reloadLock();
      expect(toolNames()).toContain(search);
      const refused = await client.callTool({ name: search, arguments: {} }).then(
        (answer) => (answer as { isError?: boolean }).isError === true,
        () => true,
      );
      expect(refused).toBe(true);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([get]);
      const unchanged = (await client.callTool({ name: get, arguments: { orderId: 'ord_1' } })) as {
        isError?: boolean;
        content: unknown[];
      };
      expect(JSON.stringify(unchanged.content)).not.toContain('not in this session');
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});
