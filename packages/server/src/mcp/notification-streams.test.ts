import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpCaller } from '../calls/caller.js';
import { NotificationStreams } from './notification-streams.js';

/** A real loopback HTTP server whose every request becomes a notification stream of `caller`. */
async function serve(streams: NotificationStreams, caller: McpCaller): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => streams.open(caller, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, server };
}

/** Reads the stream to its end; resolves with everything received. */
async function readAll(url: string): Promise<string> {
  const response = await fetch(url);
  return response.text();
}

function callerFor(sessionId: string, expiresInMs: number): McpCaller {
  return { sessionId, subject: 'alice', clientId: 'client', tools: new Map(), logins: new Set(), expiresAt: Date.now() + expiresInMs };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('notification streams end with their session', () => {
  it('a stream ends at the first keep-alive after its session was revoked elsewhere, having sent keep-alive comments before', async () => {
    let isOpen = true;
    const streams = new NotificationStreams({ logger: pino({ level: 'silent' }), isSessionOpen: () => isOpen, keepAliveMs: 50 });
    const { url, server } = await serve(streams, callerFor('session-1', 3_600_000));
    servers.push(server);
    const text = readAll(url);
    await new Promise((resolve) => setTimeout(resolve, 180));
    isOpen = false;
    const received = await text;
    expect(received.startsWith(': stream open\n\n')).toBe(true);
    expect(received).toContain(': keep-alive\n\n');
    expect(streams.size).toBe(0);
  });

  it('a stream ends when its session expires, and endSession ends the streams of a revoked session at once', async () => {
    const streams = new NotificationStreams({ logger: pino({ level: 'silent' }), isSessionOpen: () => true, keepAliveMs: 60_000 });
    const expiring = await serve(streams, callerFor('session-2', 150));
    servers.push(expiring.server);
    const started = Date.now();
    await readAll(expiring.url);
    expect(Date.now() - started).toBeLessThan(5_000);

    const revoked = await serve(streams, callerFor('session-3', 3_600_000));
    servers.push(revoked.server);
    const text = readAll(revoked.url);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(streams.size).toBe(1);
    streams.notifyToolsChanged();
    streams.endSession('session-3');
    const received = await text;
    expect(received).toContain('data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
    expect(streams.size).toBe(0);
  });
});
