/**
 * A client's cancellation is one outcome, whatever the source kind: an SDK client aborts a tools/call of an
 * OpenAPI tool and of an MCP tool, each against a slow upstream on loopback; both upstreams see their request
 * end, and both receipts read `error` with the reason CALL_CANCELLED (docs/receipts.md).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll } from './support/harness.js';
import { startFixtureMcpServer, type FixtureMcpServer } from './support/mcp-fixture-server.js';
import { freePort } from './support/net.js';
import { waitFor } from './support/webhook-receiver.js';

const ADMIN_TOKEN = 'cancellation-admin-token';

let directory: { path: string; cleanup(): Promise<void> };
let slowApi: Server;
/** Requests the slow OpenAPI upstream received, and how many of them the gateway ended before an answer. */
const slowApiSeen = { received: 0, closedEarly: 0 };
let fixture: FixtureMcpServer;
let gateway: RunningGateway;

const OPENAPI_DOCUMENT = (url: string): string =>
  [
    'openapi: 3.1.0',
    'info: { title: Slow, version: 1.0.0 }',
    `servers: [{ url: '${url}' }]`,
    'paths:',
    '  /report:',
    '    get:',
    '      operationId: slow_report',
    '      responses:',
    "        '200': { description: ok, content: { application/json: { schema: { type: object } } } }",
    '',
  ].join('\n');

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-cancellation-');
  // Never answers on its own: only the gateway's cancellation ends the request.
  slowApi = createServer((_request, response) => {
    slowApiSeen.received += 1;
    response.on('close', () => {
      if (!response.writableEnded) slowApiSeen.closedEarly += 1;
    });
  });
  await new Promise<void>((resolve) => slowApi.listen(0, '127.0.0.1', resolve));
  const slowUrl = `http://127.0.0.1:${(slowApi.address() as AddressInfo).port}`;
  fixture = await startFixtureMcpServer({ slowTool: true });
  const port = await freePort();
  const env = { GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN };
  await writeFile(join(directory.path, 'slow.yaml'), OPENAPI_DOCUMENT(slowUrl));
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  slowapi:',
      '    kind: openapi',
      '    document: slow.yaml',
      '  fixture:',
      '    kind: mcp',
      `    url: ${fixture.url}`,
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      'drift:',
      '  enabled: false',
      '',
    ].join('\n'),
  );
  const cli = async (...args: string[]) => {
    const result = await runGateway(args, { cwd: directory.path, env });
    expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
  };
  await cli('keys', 'generate', '--out', 'keys');
  for (const [source, tool] of [
    ['slowapi', 'slow_report'],
    ['fixture', 'slow'],
  ] as const) {
    await cli('import', source);
    await cli('review', source, '--select', tool);
    await cli('publish', source, '--key', 'keys/publisher.private.jwk', '--publisher', 'tester@example.com');
  }
  gateway = await startGateway({
    configPath: join(directory.path, 'gateway.yaml'),
    lockPath: join(directory.path, 'tools.lock'),
    env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set()),
  });
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  slowApi?.closeAllConnections();
  await new Promise<void>((resolve) => (slowApi ? slowApi.close(() => resolve()) : resolve()));
  await fixture?.close();
  await directory?.cleanup();
});

interface ListedReceipt {
  tool: string;
  source: string;
  outcome: string;
  reason: string | null;
}

async function receiptsOf(tool: string): Promise<ListedReceipt[]> {
  const response = await fetch(`${gateway.url}/admin/receipts?tool=${tool}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { receipts: ListedReceipt[] }).receipts;
}

/** Calls `tool` with an SDK client and aborts the call once `started()` says the upstream has it. */
async function cancelledCall(tool: string, started: () => boolean): Promise<void> {
  const client = new Client({ name: 'cancelling-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl)));
  const cancel = new AbortController();
  try {
    const call = client.callTool({ name: tool, arguments: {} }, { signal: cancel.signal });
    call.catch(() => undefined);
    await waitFor(started, `the upstream receiving the call of ${tool}`, 10_000);
    cancel.abort();
    await expect(call).rejects.toThrow();
  } finally {
    await client.close();
  }
}

describe('a client cancellation', () => {
  it('is receipted with the same outcome and reason for an OpenAPI tool and an MCP tool', async () => {
    await cancelledCall('slow_report', () => slowApiSeen.received > 0);
    // The gateway ended its request to the OpenAPI upstream.
    await waitFor(() => slowApiSeen.closedEarly > 0, 'the OpenAPI upstream seeing its request end', 10_000);

    const cancelledBefore = fixture.cancelled;
    const slowCallsBefore = fixture.slowCalls;
    // The fixture's slow tool would answer after 20 s.
    await cancelledCall('slow', () => fixture.slowCalls > slowCallsBefore);
    await waitFor(() => fixture.cancelled > cancelledBefore, 'the MCP upstream seeing its call cancelled', 10_000);

    let openApi: ListedReceipt[] = [];
    let mcp: ListedReceipt[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
      openApi = await receiptsOf('slow_report');
      mcp = await receiptsOf('slow');
      if (openApi.length > 0 && mcp.length > 0) break;
    }
    expect(openApi.map(({ source, outcome, reason }) => ({ source, outcome, reason }))).toEqual([
      { source: 'slowapi', outcome: 'error', reason: 'CALL_CANCELLED' },
    ]);
    expect(mcp.map(({ source, outcome, reason }) => ({ source, outcome, reason }))).toEqual([
      { source: 'fixture', outcome: 'error', reason: 'CALL_CANCELLED' },
    ]);
  }, 60_000);
});
