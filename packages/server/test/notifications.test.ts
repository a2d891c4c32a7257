/**
 * Notifications the capability promises (issue 20 item 6): a 2025-11-25 client is told
 * `tools.listChanged: true`, so `GET /mcp` serves its standalone SSE stream and a lock reload reaches it
 * as `notifications/tools/list_changed`. The stream is bounded per session and ends on shutdown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startHarness, type Harness } from './support/harness.js';

async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const openStreams = (harness: Harness): number => harness.logs.filter((line) => line.includes('mcp notification stream opened')).length;

/** Opens `GET /mcp` as a 2025-11-25 client would and collects what arrives. */
async function openStream(
  mcpUrl: string,
  headers: Record<string, string> = {},
): Promise<{ response: Response; received: () => string; ended: Promise<void>; abort(): void }> {
  const controller = new AbortController();
  const response = await fetch(mcpUrl, {
    headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...headers },
    signal: controller.signal,
  });
  let text = '';
  const ended = (async () => {
    if (!response.body || !response.ok) return;
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
      }
    } catch {
      // aborted by the test
    }
  })();
  return { response, received: () => text, ended, abort: () => controller.abort() };
}

describe('GET /mcp notification stream (2025-11-25)', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(async () => {
    await harness?.stop();
  });

  it('a 2025-11-25 SDK client receives notifications/tools/list_changed after a lock reload', async () => {
    const client = new LegacyClient({ name: 'list-changed-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes += 1;
    });
    const opened = openStreams(harness);
    await client.connect(new LegacyTransport(new URL(harness.mcpUrl)));
    try {
      expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
      // The SDK opens its GET stream after `initialized`; wait until the gateway holds it.
      await until(() => openStreams(harness) > opened, 'the client GET stream');
      expect(changes).toBe(0);
      await harness.republish((document) => document.replace('summary: Search orders', 'summary: Look up orders'));
      await until(() => changes > 0, 'notifications/tools/list_changed at the client');
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === 'search_orders')?.title).toBe('Look up orders');
    } finally {
      await client.close();
    }
  });

  it('GET without Accept: text/event-stream is 406; a 2026-07-28 GET is 405', async () => {
    const plain = await fetch(harness.mcpUrl, { headers: { accept: 'application/json', 'mcp-protocol-version': '2025-11-25' } });
    expect(plain.status).toBe(406);
    const modern = await fetch(harness.mcpUrl, { headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' } });
    expect(modern.status).toBe(405);
  });

  it('the stream starts with a comment, is not buffered by proxies, and a fifth stream of one session ends the oldest', async () => {
    const streams = [];
    for (let index = 0; index < 4; index += 1) streams.push(await openStream(harness.mcpUrl));
    try {
      const first = streams[0]!;
      expect(first.response.status).toBe(200);
      expect(first.response.headers.get('content-type')).toBe('text/event-stream');
      expect(first.response.headers.get('x-accel-buffering')).toBe('no');
      await until(() => first.received().startsWith(': stream open'), 'the opening comment');
      let hasFirstEnded = false;
      void first.ended.then(() => (hasFirstEnded = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(hasFirstEnded).toBe(false);
      streams.push(await openStream(harness.mcpUrl));
      await until(() => hasFirstEnded, 'the oldest stream to end');
      expect(streams[4]!.response.status).toBe(200);
    } finally {
      for (const stream of streams) stream.abort();
    }
  });
});

describe('shutdown', () => {
  it('open notification streams end when the gateway shuts down, without holding the shutdown', async () => {
    const harness = await startHarness();
    const stream = await openStream(harness.mcpUrl);
    try {
      expect(stream.response.status).toBe(200);
      const started = Date.now();
      await harness.stop();
      await stream.ended;
      // The shutdown grace is 2 s in the harness: an open stream must not use it up.
      expect(Date.now() - started).toBeLessThan(1_900);
    } finally {
      stream.abort();
    }
  });
});
