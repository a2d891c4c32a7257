/**
 * Calls on ended sessions, end to end: the gateway (startGateway) with its own authorization server, tokens
 * obtained through registration, sign-in and consent, and SDK clients of both eras. After `gateway sessions
 * revoke` (the CLI as a subprocess), or once the session's time limit passed, the client's next `tools/call`
 * still gets the 401 challenge, and is receipted as denied (SESSION_REVOKED / SESSION_EXPIRED) with its
 * webhook event at a receiver on 127.0.0.1. Requests without a usable token leave no receipt; they are
 * counted by reason in `GET /admin/status`.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PeopleDirectory } from '@gateway/runtime';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { approve, pkce, registerClient, tokenRequest } from './oauth-support/authorization-server.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const PASSWORD = 'a long and careful passphrase';
const SHORT_LIFETIME_SECONDS = 3;
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

let workspace: Workspace;
let gateway: RunningGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  workspace = await prepareWorkspace({
    configExtra: [
      'auth:',
      '  sessions:',
      `    lifetimeChoicesSeconds: [${SHORT_LIFETIME_SECONDS}, 3600]`,
      'webhooks:',
      '  audit:',
      `    url: ${receiver.url}`,
      '    secret: audit-webhook-secret',
      '    retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 }',
    ].join('\n'),
  });
  workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET = newWebhookSecret();
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add('alice', PASSWORD, { email: 'alice@example.com' });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
  await receiver?.close();
});

interface Session {
  token: string;
  sessionId: string;
  clientId: string;
  subject: string;
}

/** Registers a client, signs alice in and approves two tools for `lifetime` seconds; returns the access token. */
async function approvedSession(lifetime: number): Promise<Session> {
  const registered = await registerClient(gateway.url, { client_name: 'ended-session test', redirect_uris: [REDIRECT_URI] });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    { issuer: gateway.url, mcpUrl: gateway.mcpUrl },
    { clientId, redirectUri: REDIRECT_URI, challenge, method: 'S256' },
    { tools: ['get_order', 'search_orders'], logins: ['orders/api_key'], lifetime, password: PASSWORD },
  );
  const tokens = await tokenRequest(gateway.url, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
  });
  expect(tokens.status).toBe(200);
  const token = tokens.body.access_token as string;
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string; sub: string };
  return { token, sessionId: claims.sid, clientId, subject: claims.sub };
}

type Call = (name: string, args: Record<string, unknown>) => Promise<{ isError?: boolean }>;

async function connect(era: 'modern' | 'legacy', token: string): Promise<{ call: Call; close(): Promise<void> }> {
  const headers = { authorization: `Bearer ${token}` };
  if (era === 'modern') {
    const client = new Client({ name: 'ended-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
  }
  const client = new LegacyClient({ name: 'ended-legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
  return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
}

async function cli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const result = await runGateway(args, { cwd: workspace.directory, env: workspace.env });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

async function receiptCount(): Promise<number> {
  return (await gateway.receipts!.store.head()).size;
}

/** The newest receipt as `gateway receipts list` (a subprocess, over the admin API) shows it. */
async function newestReceipt(): Promise<Record<string, unknown>> {
  const listed = await cli(['receipts', 'list', '--limit', '1000', '--json']);
  expect(listed.exitCode, listed.stderr).toBe(0);
  const receipts = (JSON.parse(listed.stdout) as { receipts: Array<Record<string, unknown>> }).receipts;
  expect(receipts).toHaveLength(await receiptCount());
  return receipts.at(-1)!;
}

/** The event the receiver got for a receipt (structured CloudEvents: the body is the event; `data.receipt` is its id). */
async function eventFor(receiptId: string): Promise<Record<string, unknown>> {
  const events = () => receiver.requests.map((request) => JSON.parse(request.body) as { data?: { receipt?: string } });
  await waitFor(() => events().some((event) => event.data?.receipt === receiptId), `the event of ${receiptId}`);
  return events().find((event) => event.data?.receipt === receiptId) as Record<string, unknown>;
}

async function statusRefusals(): Promise<Record<string, number>> {
  const status = await cli(['status', '--json']);
  expect(status.exitCode, status.stderr).toBe(0);
  return (JSON.parse(status.stdout) as { mcpRefusals: Record<string, number> }).mcpRefusals;
}

function rpc(method: string, params: Record<string, unknown>, token?: string): Promise<Response> {
  return fetch(gateway.mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

describe.each(['modern', 'legacy'] as const)('a %s SDK client on a session that ended', (era) => {
  it('after `gateway sessions revoke`, its next tools/call gets 401 and is receipted SESSION_REVOKED, with its event', async () => {
    const session = await approvedSession(3600);
    const client = await connect(era, session.token);
    try {
      expect((await client.call('get_order', { orderId: 'ord_1001' })).isError ?? false).toBe(false);
      const revoked = await cli(['sessions', 'revoke', session.sessionId, '--reason', 'lost laptop']);
      expect(revoked.exitCode, revoked.stderr).toBe(0);

      const before = await receiptCount();
      await expect(client.call('search_orders', {})).rejects.toThrow();
      expect(await receiptCount()).toBe(before + 1);
      const receipt = await newestReceipt();
      expect(receipt).toMatchObject({
        session: session.sessionId,
        person: session.subject,
        clientId: session.clientId,
        tool: 'search_orders',
        outcome: 'denied',
        reason: 'SESSION_REVOKED',
        upstreamStatus: null,
      });
      const event = await eventFor(receipt.id as string);
      expect(event).toMatchObject({
        type: 'io.service.call.receipted',
        subject: session.sessionId,
        data: { tool: 'search_orders', outcome: 'denied', receipt: receipt.id },
      });
    } finally {
      await client.close().catch(() => undefined);
    }

    // On the wire: still the MCP authorization spec's 401 with its challenge; other methods leave no receipt.
    const before = await receiptCount();
    const call = await rpc('tools/call', { name: 'get_order', arguments: { orderId: 'ord_1' } }, session.token);
    expect(call.status).toBe(401);
    expect(call.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="[^"]+", error="invalid_token"/);
    expect(await receiptCount()).toBe(before + 1);
    expect((await rpc('tools/list', {}, session.token)).status).toBe(401);
    expect(await receiptCount()).toBe(before + 1);
  });

  it('once the time limit passed, its next tools/call gets 401 and is receipted SESSION_EXPIRED, with its event', async () => {
    const session = await approvedSession(SHORT_LIFETIME_SECONDS);
    const approvedAt = Date.now();
    const client = await connect(era, session.token);
    try {
      expect((await client.call('get_order', { orderId: 'ord_1001' })).isError ?? false).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, approvedAt + SHORT_LIFETIME_SECONDS * 1000 + 300 - Date.now()));
      const before = await receiptCount();
      await expect(client.call('get_order', { orderId: 'ord_1002' })).rejects.toThrow();
      expect(await receiptCount()).toBe(before + 1);
      const receipt = await newestReceipt();
      expect(receipt).toMatchObject({
        session: session.sessionId,
        person: session.subject,
        clientId: session.clientId,
        tool: 'get_order',
        outcome: 'denied',
        reason: 'SESSION_EXPIRED',
      });
      const event = await eventFor(receipt.id as string);
      expect(event).toMatchObject({
        subject: session.sessionId,
        data: { tool: 'get_order', outcome: 'denied', receipt: receipt.id },
      });
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});

describe('requests without a usable token', () => {
  it('a flood leaves no receipt and no event, and is counted by reason in `gateway status`', async () => {
    const before = { receipts: await receiptCount(), events: receiver.requests.length, refusals: await statusRefusals() };
    // A token signed by someone else, shaped like ours (header.payload.signature).
    const forged = `${Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'at+jwt', kid: 'not-ours' })).toString('base64url')}.e30.c2ln`;
    const FLOOD = 100;
    const statuses: number[] = [];
    for (let batch = 0; batch < FLOOD / 20; batch += 1) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          rpc('tools/call', { name: 'get_order', arguments: { orderId: 'ord_1' } }, index % 2 === 0 ? undefined : forged),
        ),
      );
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(statuses.every((status) => status === 401)).toBe(true);
    const after = await statusRefusals();
    expect(after.no_token! - before.refusals.no_token!).toBe(FLOOD / 2);
    expect(after.invalid_token! - before.refusals.invalid_token!).toBe(FLOOD / 2);
    expect(await receiptCount()).toBe(before.receipts);
    // Give a (wrongly) queued event time to go out before concluding none was sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.requests.length).toBe(before.events);
  });
});
