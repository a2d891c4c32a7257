/**
 * OpenTelemetry traces end to end: a gateway with `telemetry.traces.endpoint` pointing at an OTLP/HTTP receiver on
 * loopback, an OpenAPI source (the example orders API, a real HTTP server), an MCP source (the fixture server) and a
 * webhook endpoint. The client's W3C context (the `traceparent` header, or `params._meta` per SEP-414) is continued:
 * the exported spans chain request → decision / upstream / receipt → webhook delivery, and the upstreams and the
 * webhook receiver get a `traceparent` of the same trace whose parent is the span the gateway exported for them.
 * The call's log line names its trace id and its receipt.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { repositoryRoot, runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll, ORDERS_API_KEY, startExampleApi, type OrdersApi } from './support/harness.js';
import { startFixtureMcpServer, type FixtureMcpServer } from './support/mcp-fixture-server.js';
import { freePort } from './support/net.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

/** OTLP/JSON (opentelemetry-proto's JSON mapping: ids as hex, kind as the enum number). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}
const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4 } as const;

interface OtlpReceiver {
  url: string;
  exports: OtlpExport[];
  contentTypes: string[];
  close(): Promise<void>;
}

async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: OtlpExport[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        contentTypes.push(String(request.headers['content-type']));
        exports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport);
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    exports,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A client's W3C trace context: version 00, its trace id, its span id, sampled. */
function clientContext(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}
const parentOf = (traceparent: string) => {
  const [, traceId, parentId] = traceparent.split('-');
  return { traceId: traceId!, parentId: parentId! };
};
const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((entry) => entry.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

let directory: { path: string; cleanup(): Promise<void> };
let api: OrdersApi;
let fixture: FixtureMcpServer;
let audit: WebhookReceiver;
let otlp: OtlpReceiver;
let gateway: RunningGateway | undefined;
const logs: string[] = [];

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-traces-');
  api = await startExampleApi();
  fixture = await startFixtureMcpServer();
  audit = await startWebhookReceiver();
  otlp = await startOtlpReceiver();
  const port = await freePort();
  const env = {
    GATEWAY_SECRET_ORDERS_API_KEY: ORDERS_API_KEY,
    GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: newWebhookSecret(),
  };
  const document = await readFile(join(repositoryRoot, 'examples', 'orders-api', 'openapi.yaml'), 'utf8');
  await writeFile(join(directory.path, 'openapi.yaml'), document.replace('http://127.0.0.1:4010', api.url));
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      '      api_key: { type: apiKey, secret: orders-api-key }',
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
      'webhooks:',
      '  audit:',
      `    url: ${audit.url}`,
      '    secret: audit-webhook-secret',
      'telemetry:',
      '  traces:',
      `    endpoint: ${otlp.url}`,
      '    serviceName: gateway-under-test',
      '',
    ].join('\n'),
  );
  const cli = async (...args: string[]) => {
    const result = await runGateway(args, { cwd: directory.path, env });
    expect(result.exitCode, `${args.join(' ')}: ${String(result.stderr)}`).toBe(0);
  };
  await cli('keys', 'generate', '--out', 'keys');
  await cli('import', 'orders');
  await cli('review', 'orders', '--all-supported', '--no-interactive');
  await cli('publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'tester@example.com');
  await cli('import', 'fixture');
  await cli('review', 'fixture', '--select', 'stable');
  await cli('publish', 'fixture', '--key', 'keys/publisher.private.jwk', '--publisher', 'tester@example.com');
  gateway = await startGateway({
    configPath: join(directory.path, 'gateway.yaml'),
    lockPath: join(directory.path, 'tools.lock'),
    env,
    logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
    shutdownGraceMs: 1_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
}, 180_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.all([api?.close(), fixture?.close(), audit?.close(), otlp?.close()]);
  await directory?.cleanup();
});

async function connect(headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'traces-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway!.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t', ...headers } } }),
  );
  return client;
}

describe('traces with telemetry.traces.endpoint', () => {
  it('continue the client context to the upstreams and the webhook delivery, in spans chained parent to child', async () => {
    // An OpenAPI call under the client's `traceparent` header.
    const viaHeader = clientContext();
    const headerClient = await connect({ traceparent: viaHeader.traceparent });
    const orderRequestsBefore = api.requests.length;
    await headerClient.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
    await headerClient.close();
    const upstreamRequest = api.requests.slice(orderRequestsBefore).find((request) => request.path === '/orders/ord_1001');
    expect(upstreamRequest).toBeDefined();
    const sentToApi = parentOf(String(upstreamRequest!.headers.traceparent));
    expect(sentToApi.traceId).toBe(viaHeader.traceId);

    // An MCP call whose context is in `params._meta` (SEP-414), no header.
    const viaMeta = clientContext();
    const metaClient = await connect({});
    await metaClient.callTool({ name: 'stable', arguments: { n: 1 }, _meta: { traceparent: viaMeta.traceparent } });
    await metaClient.close();
    const sentMeta = fixture.callMeta.at(-1);
    expect(typeof sentMeta?.traceparent).toBe('string');
    const sentToFixture = parentOf(String(sentMeta!.traceparent));
    expect(sentToFixture.traceId).toBe(viaMeta.traceId);

    // A 2025-11-25 client calling an MCP source's tool is answered by the SDK path (not the fast path): the same.
    const viaLegacy = clientContext();
    const legacyClient = new LegacyClient({ name: 'traces-legacy', version: '1.0.0' });
    await legacyClient.connect(
      new LegacyTransport(new URL(gateway!.mcpUrl), {
        requestInit: { headers: { authorization: 'Bearer t', traceparent: viaLegacy.traceparent } },
      }),
    );
    await legacyClient.callTool({ name: 'stable', arguments: { n: 2 } });
    await legacyClient.close();
    const sentByLegacy = parentOf(String(fixture.callMeta.at(-1)?.traceparent));
    expect(sentByLegacy.traceId).toBe(viaLegacy.traceId);

    // The webhook event of the get_order receipt.
    await waitFor(() => audit.requests.some((request) => request.body.includes('"tool":"get_order"')), 'the get_order event');
    const delivery = audit.requests.find((request) => request.body.includes('"tool":"get_order"'))!;
    const sentToReceiver = parentOf(String(delivery.headers.traceparent));
    expect(sentToReceiver.traceId).toBe(viaHeader.traceId);
    const receiptId = (JSON.parse(delivery.body) as { data: { receipt: string } }).data.receipt;

    // Closing flushes what the batch exporter still holds.
    await gateway!.close();
    gateway = undefined;
    expect(otlp.contentTypes.every((type) => type.startsWith('application/json'))).toBe(true);
    const service = otlp.exports[0]?.resourceSpans[0]?.resource.attributes.find((entry) => entry.key === 'service.name');
    expect(service?.value.stringValue).toBe('gateway-under-test');
    const spans = otlp.exports.flatMap((exported) =>
      exported.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)),
    );
    const byId = new Map(spans.map((span) => [span.spanId, span]));

    // get_order: the request's span is the client's child; decision, upstream and receipt are the request's.
    const request = spans.find((span) => span.name === 'tools/call get_order')!;
    expect(request).toBeDefined();
    expect(request.kind).toBe(SPAN_KIND.server);
    expect(request.traceId).toBe(viaHeader.traceId);
    expect(request.parentSpanId).toBe(viaHeader.spanId);
    const children = spans.filter((span) => span.parentSpanId === request.spanId);
    expect(children.map((span) => span.name).sort()).toEqual(['gateway.decision', 'gateway.receipt', 'upstream orders']);
    const upstream = byId.get(sentToApi.parentId)!;
    expect(upstream.name).toBe('upstream orders');
    expect(upstream.kind).toBe(SPAN_KIND.client);
    expect(upstream.parentSpanId).toBe(request.spanId);
    expect(Number(attribute(upstream, 'http.response.status_code'))).toBe(200);
    const receipt = children.find((span) => span.name === 'gateway.receipt')!;
    expect(attribute(receipt, 'gateway.receipt.id')).toBe(receiptId);
    // The webhook delivery: a child of the receipt's span, and the parent the receiver was given.
    const webhook = byId.get(sentToReceiver.parentId)!;
    expect(webhook.name).toBe('webhook audit');
    expect(webhook.parentSpanId).toBe(receipt.spanId);
    expect(webhook.traceId).toBe(viaHeader.traceId);

    // stable (MCP source): the context from `_meta`, passed on in `_meta`.
    const mcpRequest = spans.find((span) => span.name === 'tools/call stable')!;
    expect(mcpRequest.traceId).toBe(viaMeta.traceId);
    expect(mcpRequest.parentSpanId).toBe(viaMeta.spanId);
    const mcpUpstream = byId.get(sentToFixture.parentId)!;
    expect(mcpUpstream.name).toBe('upstream fixture');
    expect(mcpUpstream.parentSpanId).toBe(mcpRequest.spanId);

    const legacyUpstream = byId.get(sentByLegacy.parentId)!;
    expect(legacyUpstream.name).toBe('upstream fixture');
    expect(byId.get(legacyUpstream.parentSpanId!)?.parentSpanId).toBe(viaLegacy.spanId);

    // The call's log line: its trace id and its receipt.
    const lines = logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = lines.find((line) => line.msg === 'tool call' && line.tool === 'get_order');
    expect(logged).toMatchObject({ traceId: viaHeader.traceId, receipt: receiptId });
  }, 60_000);
});
