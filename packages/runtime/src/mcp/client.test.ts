/**
 * The MCP client's connection errors: an upstream that refuses the connection and quotes the request in its
 * answer (here the `Authorization` header, plain and base64) must not put the source's credential into the
 * error a client or a log sees.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, parseConfig } from '@gateway/core';
import { createVault } from '../vault/index.js';
import { connectMcpUpstream } from './client.js';

const TOKEN = 'client-test-token/with+chars=';
let server: ReturnType<typeof createServer>;
let url: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const header = String(request.headers.authorization);
    response.writeHead(400, { 'content-type': 'text/plain' }).end(`refused ${header} (${Buffer.from(header).toString('base64')})`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('connection errors', () => {
  it("an upstream's answer quoted in a connection error carries no credential of the source", async () => {
    process.env.CLIENTTEST_SECRET_REMOTE_TOKEN = TOKEN;
    const loaded = parseConfig(
      'gateway:\n  url: http://127.0.0.1:8080\nvault:\n  provider: env\n  env: { prefix: CLIENTTEST_SECRET_ }\n' +
        'network:\n  allowPrivateNetworks: [127.0.0.1/32]\nsources:\n' +
        `  remote:\n    kind: mcp\n    url: ${url}\n    credentials: { type: bearer, secret: remote-token }\n` +
        '    timeouts: { connectMs: 5000 }\n',
      '/tmp/gateway.yaml',
    );
    const error = await connectMcpUpstream({
      sourceName: 'remote',
      source: loaded.config.sources.remote as never,
      baseDirectory: '/tmp',
      vault: await createVault(loaded),
      allowPrivateNetworks: ['127.0.0.1/32'],
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GatewayError);
    const message = (error as GatewayError).message;
    expect((error as GatewayError).code).toBe('MCP_UPSTREAM_UNAVAILABLE');
    // The upstream's words are kept, its echo of the credential is not.
    expect(message).toContain('refused [redacted] ([redacted])');
    for (const form of [TOKEN, Buffer.from(TOKEN).toString('base64'), Buffer.from(`Bearer ${TOKEN}`).toString('base64')]) {
      expect(message).not.toContain(form);
    }
    expect((error as GatewayError).cause).toBeUndefined();
  }, 30_000);
});
