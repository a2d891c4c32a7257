/**
 * A real webhook receiver on 127.0.0.1 for tests: records every request (headers, raw body, arrival time)
 * and answers with what the test's `respond` decides for it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** The status the receiver answered. */
  status: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Milliseconds to wait before answering (a slow receiver). */
  delayMs?: number;
  /** An answer body (the gateway reads at most 64 KiB of it). */
  body?: string;
}

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  respond: (request: { headers: IncomingHttpHeaders; body: string; index: number }) => Reply;
  close(): Promise<void>;
}

/**
 * `port`: listen on this one (a receiver brought back up where it was after being down); default a free one.
 * `requests`: go on recording into this list (the earlier receiver's).
 */
export async function startWebhookReceiver(
  respond: WebhookReceiver['respond'] = () => ({ status: 204 }),
  options: { port?: number; requests?: ReceivedRequest[] } = {},
): Promise<WebhookReceiver> {
  const receiver: WebhookReceiver = { url: '', requests: options.requests ?? [], respond, close: async () => undefined };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const reply = receiver.respond({ headers: request.headers, body, index: receiver.requests.length });
      const answer = () => {
        receiver.requests.push({ headers: request.headers, body, at: Date.now(), status: reply.status });
        response.writeHead(reply.status, reply.headers ?? {});
        response.end(reply.body);
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** A fresh Standard Webhooks secret (`whsec_` + base64 of 32 random bytes). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Waits until `condition` holds (polling), or fails after `timeoutMs` naming what it waited for. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
