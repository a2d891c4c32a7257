/**
 * "A person must act first" end to end, both eras, real SDK clients, through the test-only gate
 * (support/person-action-gate.ts): 2026-07-28 with the `elicitation.url` capability gets `input_required`
 * with a URL elicitation and a sealed `requestState`, and the SDK v2 client's driver retries with it;
 * 2025-11-25 (SDK v1) and 2026-07-28 without the capability get -32042 and retry. A changed or spent
 * `requestState` is refused (raw JSON-RPC: the SDK client never sends one it did not get). Every answer is
 * receipted: `action-required` (PERSON_ACTION_REQUIRED), then `allowed`, or `denied` with the state's code.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import type { McpAuthorizer, McpCaller } from '../src/calls/caller.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { testPersonActionGate } from './support/person-action-gate.js';
import { rawModernCall } from './support/raw-modern-call.js';

let workspace: Workspace;
let gateway: RunningGateway;
const headers = { authorization: 'Bearer client-token' };
let session = 'session-1';
let gate: ReturnType<typeof testPersonActionGate>;

beforeAll(async () => {
  workspace = await prepareWorkspace();
  gate = testPersonActionGate(['get_order']);
  const authorizer = ({ registry }: { registry: RunningGateway['registry'] }): McpAuthorizer => ({
    async authenticate() {
      const snapshot = registry.snapshot();
      const tools = new Map<string, string>();
      for (const name of snapshot.names) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
      const caller: McpCaller = {
        sessionId: session,
        subject: 'alice@example.com',
        clientId: 'client-act',
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
    personActionGates: [gate],
  });
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
  const { size: end } = await store.head();
  for (let index = size; index < end; index += 1) receipts.push((await store.get(index)) as unknown as Record<string, unknown>);
  return receipts;
}

const outcomes = (receipts: Array<Record<string, unknown>>) => receipts.map((receipt) => [receipt.tool, receipt.outcome, receipt.reason]);

describe('a person must act first', () => {
  it('2026-07-28 with elicitation.url: input_required with a URL elicitation, then the retry with requestState succeeds', async () => {
    session = 'session-modern';
    const before = (await gateway.receipts!.store.head()).size;
    const client = new Client(
      { name: 'v2-act', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { url: {} } } },
    );
    const elicited: Array<Record<string, unknown>> = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      elicited.push(request.params as Record<string, unknown>);
      gate.complete((request.params as { url: string }).url);
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    try {
      const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(elicited).toHaveLength(1);
    expect(elicited[0]).toMatchObject({ mode: 'url', url: expect.stringContaining('https://gateway.test/act') });
    expect(outcomes(await receiptsSince(before, 2))).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'allowed', null],
    ]);
  });

  it('2025-11-25 (SDK v1): the error -32042 names the URL; the retry succeeds once the person acted', async () => {
    session = 'session-legacy';
    const before = (await gateway.receipts!.store.head()).size;
    const client = new LegacyClient({ name: 'v1-act', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
    await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    try {
      const error = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }).then(
        () => undefined,
        (thrown: unknown) => thrown as { code: number; data: { elicitations: Array<{ mode: string; url: string }> } },
      );
      expect(error?.code).toBe(-32042);
      expect(error!.data.elicitations[0]).toMatchObject({ mode: 'url', url: expect.stringContaining('https://gateway.test/act') });
      gate.complete(error!.data.elicitations[0]!.url);
      const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(outcomes(await receiptsSince(before, 2))).toEqual([
      ['get_order', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ['get_order', 'allowed', null],
    ]);
  });

  it('2026-07-28 without the elicitation.url capability: the error -32042 too', async () => {
    session = 'session-modern-no-url';
    const client = new Client({ name: 'v2-plain', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    try {
      const error = (await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as { code: number; data: { elicitations: Array<{ url: string }> } } | undefined;
      expect(error?.code).toBe(-32042);
      gate.complete(error!.data.elicitations[0]!.url);
      expect((await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});

/** One raw 2026-07-28 `tools/call` (what the SDK v2 client sends), with optional retry members. */
function rawCall(extra: Record<string, unknown>, argumentsValue: Record<string, unknown> = { orderId: 'ord_1001' }) {
  return rawModernCall(gateway.mcpUrl, headers, 'get_order', argumentsValue, extra);
}

describe('the requestState of a retry', () => {
  it("a changed, another call's or a spent requestState is refused (-32602) and receipted with its code", async () => {
    session = 'session-raw';
    const first = await rawCall({});
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const state = first.result!.requestState as string;
    const inputRequests = first.result!.inputRequests as Record<string, { params: { url: string } }>;
    const [elicitationId, request] = Object.entries(inputRequests)[0]!;
    gate.complete(request.params.url);
    const inputResponses = { [elicitationId]: { action: 'accept' } };

    const before = (await gateway.receipts!.store.head()).size;
    const [version, payload, tag] = state.split('.') as [string, string, string];
    const forged = `${version}.${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${tag}`;
    expect((await rawCall({ inputResponses, requestState: forged })).error?.code).toBe(-32602);
    // The state is bound to the arguments it was issued for.
    expect((await rawCall({ inputResponses, requestState: state }, { orderId: 'ord_2002' })).error?.code).toBe(-32602);
    const retried = await rawCall({ inputResponses, requestState: state });
    expect(retried.result?.isError).toBeFalsy();
    expect(retried.result?.resultType).toBe('complete');
    // Single use.
    const replayed = await rawCall({ inputResponses, requestState: state });
    expect(replayed.error?.code).toBe(-32602);
    expect(replayed.error?.message).toMatch(/already used/);
    expect(outcomes(await receiptsSince(before, 4))).toEqual([
      ['get_order', 'denied', 'REQUEST_STATE_INVALID'],
      ['get_order', 'denied', 'REQUEST_STATE_INVALID'],
      ['get_order', 'allowed', null],
      ['get_order', 'denied', 'REQUEST_STATE_USED'],
    ]);
  });
});
