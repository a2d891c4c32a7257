/**
 * The gateway itself SIGKILLed in the middle of 1,000 calls, five times, with a slow webhook receiver: after
 * the last restart every receipt has its event delivered, in sequence order, a repeat only under the same
 * id, none lost, and `gateway receipts verify` passes.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway } from '../../../test-support/cli.js';
import { prepareWorkspace, receiptSigningKeyPem, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const child = fileURLToPath(new URL('./support/gateway-crash-child.mjs', import.meta.url));
const TOTAL_CALLS = 1000;
/** Calls made before each kill: the kill lands while the next call is in flight. */
const KILL_AT = [120, 330, 510, 700, 880];
const secret = newWebhookSecret();
const ADMIN_TOKEN = 'crash-admin-token-51f0';

let workspace: Workspace | undefined;
let receiver: WebhookReceiver | undefined;
let running: ChildProcess | undefined;

afterAll(async () => {
  running?.kill('SIGKILL');
  await receiver?.close();
  await workspace?.cleanup();
});

describe('webhooks across gateway crashes', () => {
  it('SIGKILL the gateway mid-way through 1,000 calls, five times: every receipt has its event, in order, ' +
    'none lost, receipts verify', async () => {
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 2 })); // a slow receiver
    workspace = await prepareWorkspace({
      configExtra: [
        'webhooks:',
        '  audit:',
        `    url: ${receiver.url}`,
        '    secret: audit-webhook-secret',
        '    retry: { attempts: 100, initialDelayMs: 5, maxDelayMs: 50, timeoutMs: 5000 }',
      ].join('\n'),
    });
    Object.assign(workspace.env, { GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: secret, GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN });
    // One checkpoint signing key across the restarts (the env vault cannot store one): `receipts verify` trusts it.
    workspace.env.GATEWAY_SECRET_RECEIPTS_SIGNING_KEY = receiptSigningKeyPem();
    const env = { ...process.env, ...workspace.env, CRASH_CONFIG: workspace.configPath, CRASH_LOCK: workspace.lockPath };

    const start = async (): Promise<{ process: ChildProcess; mcpUrl: string }> => {
      const process = fork(child, [], { env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      running = process;
      const mcpUrl = await new Promise<string>((resolve, reject) => {
        process.once('message', (message: { mcpUrl: string }) => resolve(message.mcpUrl));
        process.once('exit', (code) => reject(new Error(`gateway exited ${code} before it was ready`)));
      });
      return { process, mcpUrl };
    };
    const connect = async (mcpUrl: string) => {
      const client = new Client({ name: 'crash-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
      return client;
    };

    const countAcknowledged = () =>
      new Set(receiver!.requests.filter((request) => request.status === 200).map((request) => request.headers['webhook-id'])).size;
    /** How many events were still undelivered at each kill: the kills must land in the middle of delivery. */
    const behindAtKill: number[] = [];
    let calls = 0;
    for (const killAt of [...KILL_AT, TOTAL_CALLS]) {
      const gateway = await start();
      const client = await connect(gateway.mcpUrl);
      while (calls < killAt) {
        await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
        calls += 1;
      }
      if (killAt === TOTAL_CALLS) {
        await client.close();
        break;
      }
      behindAtKill.push(calls - countAcknowledged());
      // One more call in flight, and the process killed under it (its receipt may or may not exist).
      const inFlight = client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }).catch(() => undefined);
      // Listened for before the kill: the exit can be reported while the in-flight call is still failing.
      const exited = new Promise((resolve) => gateway.process.once('exit', resolve));
      gateway.process.kill('SIGKILL');
      await inFlight;
      await exited;
      await client.close().catch(() => undefined);
    }

    const database = new Database(join(workspace.directory, '.gateway', 'gateway.db'), { readonly: true });
    const receipts = (database.prepare('SELECT COUNT(*) AS count FROM receipts').get() as { count: number }).count;
    await waitFor(() => countAcknowledged() === receipts, `events for all ${receipts} receipts`, 60_000);
    database.close();
    expect(
      behindAtKill.filter((behind) => behind > 0).length,
      `undelivered at each kill: ${behindAtKill.join(', ')}`,
    ).toBeGreaterThanOrEqual(3);
    expect(receipts).toBeGreaterThanOrEqual(TOTAL_CALLS);
    expect(receipts).toBeLessThanOrEqual(TOTAL_CALLS + KILL_AT.length);

    const acknowledged = receiver.requests.filter((request) => request.status === 200);
    const sequences = acknowledged.map((request) => Number((JSON.parse(request.body) as { sequence: string }).sequence));
    expect(sequences.every((sequence, index) => index === 0 || sequence >= sequences[index - 1]!)).toBe(true);
    expect([...new Set(sequences)]).toEqual(Array.from({ length: receipts }, (_, index) => index + 1));
    const bodyBySequence = new Map<number, string>();
    for (const [index, request] of acknowledged.entries()) {
      const event = JSON.parse(request.body) as { id: string; subject: string; data: { receipt: string } };
      expect(request.headers['webhook-id']).toBe(event.id);
      expect(event.id).toBe(`evt_${event.data.receipt}_audit`);
      expect(event.data.receipt).toBe(`receipt-${sequences[index]! - 1}`); // one endpoint, every outcome: receipt n is event n+1
      expect(event.subject).toBe('session-5');
      expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
      const first = bodyBySequence.get(sequences[index]!);
      if (first === undefined) bodyBySequence.set(sequences[index]!, request.body);
      else expect(request.body).toBe(first);
    }

    const verified = await runGateway(['receipts', 'verify'], { cwd: workspace.directory, env: workspace.env });
    expect(verified.exitCode, `${String(verified.stdout)}\n${String(verified.stderr)}`).toBe(0);
  }, 300_000);
});
