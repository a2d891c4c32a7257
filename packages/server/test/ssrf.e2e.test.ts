/**
 * The SSRF guard on the execution path: an upstream server URL in the signed lock that resolves to a
 * loopback or private address is refused at connect time unless gateway.yaml allows that range, and the
 * upstream is never reached.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll, prepareWorkspace, type Workspace } from './support/harness.js';

let workspace: Workspace;
let gateway: RunningGateway;

beforeAll(async () => {
  workspace = await prepareWorkspace();
  // The same signed lock, but without the loopback exception the example needs.
  const config = await readFile(workspace.configPath, 'utf8');
  const withoutException = config.replace('allowPrivateNetworks: [127.0.0.1/32]', 'allowPrivateNetworks: []');
  expect(withoutException).not.toBe(config);
  await writeFile(workspace.configPath, withoutException);
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
});

describe('SSRF guard on upstream calls', () => {
  it('a tool whose server URL is a loopback address is refused and the upstream never sees the request', async () => {
    const client = new Client({ name: 'ssrf-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl)));
    try {
      const before = workspace.api.requests.length;
      const result = (await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } })) as {
        isError?: boolean;
        content: Array<{ type: string; text?: string }>;
      };
      expect(result.isError).toBe(true);
      const text = result.content.map((block) => block.text ?? '').join('\n');
      expect(text).toMatch(/SSRF_ADDRESS_REFUSED|refused/i);
      expect(text).toContain('127.0.0.1');
      expect(workspace.api.requests.length).toBe(before);
    } finally {
      await client.close();
    }
  });
});
