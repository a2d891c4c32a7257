/**
 * mcp-remote, a widely deployed MCP client (stdio ↔ remote, dynamic client registration and browser OAuth), through
 * the gateway end to end with real parts only: the gateway on 127.0.0.1 whose sign-in is OIDC only (oidc-provider
 * as the company's provider, no local accounts), an `oauthPerson` login at a second oidc-provider (the customer's)
 * in front of an API that verifies each JWT and answers with its `sub`, mcp-remote as a subprocess against
 * `{gateway_url}/mcp`, and an SDK 1.x client speaking to mcp-remote over stdio. mcp-remote opens the browser
 * through `BROWSER`: support/chromium-browser.mjs, which signs in and consents in a shared headless Chromium.
 *
 * What mcp-remote does with "a person must act first" (docs/credentials.md, docs/approvals.md): in its default
 * mode it speaks 2025-11-25 to the gateway and passes the URL-elicitation-required error (-32042) through to the
 * client unchanged, with its URL; the client's retry, once the person acted, runs the call. With `--protocol auto`
 * it speaks 2026-07-28 and cannot carry a URL elicitation to its 2025-era client: a client that declares
 * `elicitation.url` gets mcp-remote's own error -32001 without the URL; one that does not gets -32042.
 *
 * (a) OAuth and consent through mcp-remote, then a call; (b) a per-person call before linking: -32042 with the
 * connect page, completed in a browser where no one is signed in to the gateway yet (the connect page's OIDC
 * sign-in), and the retry returns the person's own `sub`; a grant revoked at the provider asks for linking again
 * on the very call whose refresh finds it; (c) an `approval: each-call` tool: -32042 with the approval page,
 * approved in Chromium, the retry runs the call once.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { loadConfig, type AdminSessionList } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { tokenSecretName } from '../src/credentials/person/token-vault.js';
import { freePort } from './support/net.js';
import { ageStoredToken } from './support/person-provider.js';
import { BROWSER_SCRIPT, startSharedChromium, type SharedChromium } from './support/shared-chromium.js';
import {
  startPersonProvider,
  startSignInProvider,
  startWhoAmIApi,
  type RunningProvider,
  type WhoAmIApi,
} from './support/oidc-providers.js';

const MCP_REMOTE = createRequire(import.meta.url).resolve('mcp-remote/dist/proxy.js');
const PERSON_CLIENT_SECRET = 'person-provider-client-secret-for-tests';
const SIGNIN_CLIENT_SECRET = 'signin-provider-client-secret-for-tests';
const LOGIN = 'who/oauth';
const ADMIN_TOKEN = 'admin-token-for-mcp-remote';

let directory: { path: string; cleanup(): Promise<void> };
let signInProvider: RunningProvider;
let personProvider: RunningProvider;
let api: WhoAmIApi;
let gateway: RunningGateway;
let gatewayUrl: string;
let vault: Vault;
let chromium: SharedChromium;
let person: string;

const openApiDocument = (providerIssuer: string, apiPort: number) => `openapi: 3.1.0
info: { title: Who, version: 1.0.0 }
servers: [{ url: 'http://127.0.0.1:${apiPort}' }]
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows:
        authorizationCode:
          authorizationUrl: ${providerIssuer}/auth
          tokenUrl: ${providerIssuer}/token
          scopes: { 'orders:read': read orders }
paths:
  /whoami:
    get:
      operationId: whoami
      summary: Who the token is for
      security: [{ oauth: ['orders:read'] }]
      responses:
        '200': { description: ok, content: { application/json: { schema: { type: object } } } }
  /ping:
    get:
      operationId: ping
      summary: Answers pong
      security: []
      responses:
        '200': { description: ok, content: { application/json: { schema: { type: object } } } }
  /notes:
    post:
      operationId: save_note
      summary: Saves a note
      security: []
      requestBody:
        required: true
        content:
          application/json:
            schema: { type: object, required: [text], properties: { text: { type: string } } }
      responses:
        '201': { description: saved, content: { application/json: { schema: { type: object } } } }
`;

async function cli(args: string[]): Promise<string> {
  const result = await runGateway(args, { cwd: directory.path, env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN } });
  if (result.exitCode !== 0)
    throw new Error(`gateway ${args.join(' ')} exited ${result.exitCode}:\n${String(result.stdout)}\n${String(result.stderr)}`);
  return String(result.stdout);
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-mcp-remote-');
  const [gatewayPort, signInPort, personPort, apiPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  signInProvider = await startSignInProvider({
    port: signInPort,
    gatewayUrl,
    clientId: 'gateway-signin',
    clientSecret: SIGNIN_CLIENT_SECRET,
  });
  person = `oidc:${signInProvider.issuer}#alice`;
  personProvider = await startPersonProvider({
    port: personPort,
    gatewayUrl,
    clientId: 'gateway',
    clientSecret: PERSON_CLIENT_SECRET,
    resource: () => api.url,
    scope: 'orders:read',
  });
  api = await startWhoAmIApi(apiPort, personProvider.issuer);
  await writeFile(join(directory.path, 'openapi.yaml'), openApiDocument(personProvider.issuer, apiPort));
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: ${gatewayUrl}`,
      `  listen: 127.0.0.1:${gatewayPort}`,
      'auth:',
      '  local: { enabled: false }',
      `  oidc: { issuer: '${signInProvider.issuer}', clientId: gateway-signin, clientSecret: signin-client-secret, ` +
        'label: Sign in with Example Corp }',
      'sources:',
      '  who:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      `      oauth: { type: oauthPerson, issuer: '${personProvider.issuer}', clientId: gateway, secret: who-client-secret, ` +
        `scopes: [openid, offline_access, 'orders:read'], resource: '${api.url}', label: Example ID }`,
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'drift:',
      '  enabled: false',
      '',
    ].join('\n'),
  );
  await cli(['keys', 'generate', '--out', 'keys']);
  await cli(['import', 'who']);
  await cli(['review', 'who', '--all-supported', '--each-call', 'save_note', '--no-interactive']);
  await cli(['publish', 'who', '--key', join(directory.path, 'keys', 'publisher.private.jwk'), '--publisher', 'test@example.com']);
  vault = await createVault(await loadConfig(join(directory.path, 'gateway.yaml')), { env: {} });
  await vault.set('who-client-secret', PERSON_CLIENT_SECRET);
  await vault.set('signin-client-secret', SIGNIN_CLIENT_SECRET);
  await vault.set('admin-token', ADMIN_TOKEN);
  gateway = await startGateway({
    configPath: join(directory.path, 'gateway.yaml'),
    env: {},
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  await mkdir(join(directory.path, 'chromium'));
  chromium = await startSharedChromium(join(directory.path, 'chromium'), join(directory.path, 'browser.log'));
}, 180_000);

afterAll(async () => {
  await chromium?.close();
  await gateway?.close();
  await api?.close();
  await personProvider?.close();
  await signInProvider?.close();
  await directory?.cleanup();
});

interface RemoteClient {
  client: Client;
  /** What mcp-remote wrote on stderr (its log). */
  log: () => string;
  /** The elicitation requests mcp-remote passed to the client (none in either mode, as it turns out). */
  elicitations: unknown[];
  close(): Promise<void>;
}

/** mcp-remote against the gateway's /mcp, with an SDK 1.x client on its stdio; `protocol` is its `--protocol`. */
async function connectThroughMcpRemote(options: { protocol?: 'auto'; declareUrlElicitation?: boolean } = {}): Promise<RemoteClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_REMOTE, `${gatewayUrl}/mcp`, ...(options.protocol ? ['--protocol', options.protocol] : [])],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: directory.path,
      MCP_REMOTE_CONFIG_DIR: join(directory.path, 'mcp-auth'),
      BROWSER: BROWSER_SCRIPT,
      ...chromium.env('alice'),
    },
    stderr: 'pipe',
  });
  let log = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  const client = new Client(
    { name: 'mcp-remote-e2e', version: '1.0.0' },
    { capabilities: options.declareUrlElicitation === false ? {} : { elicitation: { url: {} } } },
  );
  const elicitations: unknown[] = [];
  if (options.declareUrlElicitation !== false) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(request.params);
      return { action: 'decline' };
    });
  }
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`mcp-remote did not connect: ${(error as Error).message}\n${log}`);
  }
  return { client, log: () => log, elicitations, close: () => client.close() };
}

type Refusal = { code: number; message: string; data?: { elicitations?: Array<{ mode: string; url: string; elicitationId: string }> } };

async function refusalOf(promise: Promise<unknown>): Promise<Refusal | undefined> {
  return promise.then(
    () => undefined,
    (thrown: unknown) => thrown as Refusal,
  );
}

async function receiptsSince(size: number, count: number): Promise<Array<Record<string, unknown>>> {
  const store = gateway.receipts!.store;
  const deadline = Date.now() + 5_000;
  while ((await store.head()).size < size + count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const receipts: Array<Record<string, unknown>> = [];
  const head = await store.head();
  for (let index = size; index < head.size; index += 1) receipts.push((await store.get(index)) as unknown as Record<string, unknown>);
  return receipts;
}

/** The paths of the gateway's pages a browser went through (the providers' left out). */
const gatewayPaths = (visited: string[]) => visited.filter((url) => new URL(url).origin === gatewayUrl).map((url) => new URL(url).pathname);
const textOf = (result: unknown) => JSON.stringify((result as { content?: unknown }).content);
const subOf = (result: unknown) => (result as { structuredContent?: { sub?: string } }).structuredContent?.sub;

let remote: RemoteClient;

describe('mcp-remote through the gateway', () => {
  it('(a) gets through OIDC sign-in and consent in the browser it opens, and a tool call succeeds', async () => {
    remote = await connectThroughMcpRemote();
    // mcp-remote registered itself and opened the consent page through BROWSER; the person signed in and allowed.
    const { sessions } = JSON.parse(await cli(['sessions', 'list', '--json'])) as AdminSessionList;
    expect(sessions.map((session) => [session.subject, session.client])).toEqual([[person, expect.stringContaining('MCP CLI Proxy')]]);
    expect(sessions[0]!.tools.map((tool) => tool.name).sort()).toEqual(['ping', 'save_note', 'whoami']);
    const tools = await remote.client.listTools();
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual(['ping', 'save_note', 'whoami']);
    const before = (await gateway.receipts!.store.head()).size;
    const result = await remote.client.callTool({ name: 'ping', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('pong');
    expect((await receiptsSince(before, 1)).map((receipt) => [receipt.person, receipt.tool, receipt.outcome])).toEqual([
      [person, 'ping', 'allowed'],
    ]);
  }, 180_000);

  it('(b) a per-person call before linking: -32042 passed through with the connect page; linked in Chromium, retry is hers', async () => {
    const before = (await gateway.receipts!.store.head()).size;
    const refused = await refusalOf(remote.client.callTool({ name: 'whoami', arguments: {} }));
    // mcp-remote (2025-11-25 to the gateway) hands the URL-elicitation-required error through unchanged.
    expect(refused?.code).toBe(-32042);
    const url = refused!.data!.elicitations![0]!.url;
    expect(refused!.data!.elicitations![0]!.mode).toBe('url');
    expect(url).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
    expect(remote.elicitations).toEqual([]);
    expect(api.seen.filter((seen) => seen.path === '/whoami')).toEqual([]);
    // Opened in a browser where no one is signed in to the gateway: the connect page offers the OIDC sign-in
    // (local accounts are off), which comes back to it, and on to the provider to link.
    const opened = await chromium.open(url, { account: 'alice', fresh: true });
    expect(opened.heading).toBe('Connected Example ID');
    // The connect page, its OIDC sign-in and back, on to the customer's provider, and its callback.
    expect(gatewayPaths(opened.visited)).toEqual(['/connect', '/signin/oidc', '/signin/oidc/callback', '/connect', '/connect/callback']);
    const result = await remote.client.callTool({ name: 'whoami', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(subOf(result)).toBe('alice');
    expect((await receiptsSince(before, 2)).map((receipt) => [receipt.tool, receipt.outcome, receipt.reason, receipt.login])).toEqual([
      ['whoami', 'action-required', 'PERSON_ACTION_REQUIRED', null],
      ['whoami', 'allowed', null, `${LOGIN} sub=alice`],
    ]);
  }, 120_000);

  it('(b) a grant revoked at the provider: the call whose refresh finds it asks for linking again, through mcp-remote', async () => {
    const name = tokenSecretName(person, LOGIN);
    const stored = JSON.parse((await vault.get(name))!) as { refreshToken: string };
    expect(await personProvider.revoke(stored.refreshToken)).toBe(200);
    // The access token is about to expire, so the next call refreshes it first.
    await ageStoredToken(vault, person, LOGIN);
    const sent = api.seen.length;
    const refused = await refusalOf(remote.client.callTool({ name: 'whoami', arguments: {} }));
    expect(refused?.code).toBe(-32042);
    expect(refused!.data!.elicitations![0]!.url).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
    expect(api.seen.length).toBe(sent);
    expect(await vault.get(name)).toBeUndefined();
    // In the person's own browser (signed in to the gateway since the consent), linking goes straight on.
    expect((await chromium.open(refused!.data!.elicitations![0]!.url, { account: 'alice' })).heading).toBe('Connected Example ID');
    expect(subOf(await remote.client.callTool({ name: 'whoami', arguments: {} }))).toBe('alice');
  }, 120_000);

  it('(c) an each-call tool: -32042 with the approval page, approved in Chromium, the retry runs the call once', async () => {
    const before = (await gateway.receipts!.store.head()).size;
    const notes = () => api.seen.filter((seen) => seen.path === '/notes').length;
    const refused = await refusalOf(remote.client.callTool({ name: 'save_note', arguments: { body: { text: 'hello' } } }));
    expect(refused?.code).toBe(-32042);
    const url = refused!.data!.elicitations![0]!.url;
    expect(url).toMatch(new RegExp(`^${gatewayUrl}/approvals/approval-`));
    expect(notes()).toBe(0);
    // Opened in a browser where no one is signed in: the approval page sends the person to the gateway's sign-in
    // (the OIDC provider's, local accounts being off) and back, and she approves.
    const opened = await chromium.open(url, { account: 'alice', fresh: true });
    expect(opened.url).toBe(url);
    expect(opened.heading).toBe('Approve a call of save_note?');
    const approval = new URL(url).pathname;
    expect(gatewayPaths(opened.visited)).toEqual([
      approval,
      '/signin',
      '/signin/oidc',
      '/signin/oidc/callback',
      approval,
      approval,
      approval,
    ]);
    const result = await remote.client.callTool({ name: 'save_note', arguments: { body: { text: 'hello' } } });
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(textOf(result)).toContain('hello');
    expect(notes()).toBe(1);
    // Used once: the same call again asks for a new approval and does not run.
    const again = await refusalOf(remote.client.callTool({ name: 'save_note', arguments: { body: { text: 'hello' } } }));
    expect(again?.code).toBe(-32042);
    expect(again!.data!.elicitations![0]!.url).not.toBe(url);
    expect(notes()).toBe(1);
    // The person's decision is receipted too (an action receipt naming the approver), and the call names its approval.
    const receipts = await receiptsSince(before, 4);
    expect(receipts.map((receipt) => [receipt.tool, receipt.outcome, receipt.reason, receipt.action ? 'approval' : 'call'])).toEqual([
      ['save_note', 'action-required', 'PERSON_ACTION_REQUIRED', 'call'],
      ['save_note', 'allowed', null, 'approval'],
      ['save_note', 'allowed', null, 'call'],
      ['save_note', 'action-required', 'PERSON_ACTION_REQUIRED', 'call'],
    ]);
    const approvalId = new URL(url).pathname.split('/').pop();
    expect(receipts[1]!.action).toMatchObject({ kind: 'approval', approval: approvalId, decision: 'approved' });
    expect(receipts[2]!.approval).toBe(approvalId);
    await remote.close();
  }, 120_000);

  it('with --protocol auto (2026-07-28 upstream): URL elicitation never reaches a client declaring it; -32042 does otherwise', async () => {
    // The tokens mcp-remote stored are reused: no browser this time.
    const declaring = await connectThroughMcpRemote({ protocol: 'auto' });
    try {
      const refused = await refusalOf(declaring.client.callTool({ name: 'save_note', arguments: { body: { text: 'auto' } } }));
      // mcp-remote cannot put a URL elicitation to its 2025-era client: its own error, without the URL.
      expect(refused?.code).toBe(-32001);
      expect(refused?.message).toContain('elicitation/create');
      expect(refused?.data?.elicitations).toBeUndefined();
      expect(declaring.elicitations).toEqual([]);
    } finally {
      await declaring.close();
    }
    const plain = await connectThroughMcpRemote({ protocol: 'auto', declareUrlElicitation: false });
    try {
      const refused = await refusalOf(plain.client.callTool({ name: 'save_note', arguments: { body: { text: 'auto' } } }));
      expect(refused?.code).toBe(-32042);
      expect(refused!.data!.elicitations![0]!.url).toMatch(new RegExp(`^${gatewayUrl}/approvals/approval-`));
    } finally {
      await plain.close();
    }
  }, 120_000);
});
