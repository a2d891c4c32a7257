/**
 * The receipt journal in a real gateway process: a call answered while another process holds the database's
 * write lock has its receipt in the journal only; the gateway SIGKILLed then, and started again once the lock
 * is gone, moves it into the database, with its event, and `receipts verify` passes. A line added to the journal
 * while the gateway is stopped is not moved in but quarantined, and logged with its code.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway } from '../../../test-support/cli.js';
import { prepareWorkspace, receiptSigningKeyPem, type Workspace } from './support/harness.js';
import { journalKeyOf, journalText, receiptDraft } from './support/receipt-journal.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const child = fileURLToPath(new URL('./support/gateway-crash-child.mjs', import.meta.url));
const secret = newWebhookSecret();

let workspace: Workspace | undefined;
let receiver: WebhookReceiver | undefined;
/** Every gateway process the tests start, killed at the end whatever happened. */
const started: ChildProcess[] = [];

afterAll(async () => {
  for (const gateway of started) gateway.kill('SIGKILL');
  await receiver?.close();
  await workspace?.cleanup();
});

describe('the receipt journal', () => {
  it('a call answered while the database is locked is receipted from the journal after a SIGKILL and a restart', async () => {
    receiver = await startWebhookReceiver(() => ({ status: 200 }));
    workspace = await prepareWorkspace({
      configExtra: ['webhooks:', '  audit:', `    url: ${receiver.url}`, '    secret: audit-webhook-secret'].join('\n'),
    });
    Object.assign(workspace.env, { GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: secret });
    // One checkpoint signing key across the restarts (the env vault cannot store one): `receipts verify` trusts it.
    workspace.env.GATEWAY_SECRET_RECEIPTS_SIGNING_KEY = receiptSigningKeyPem();
    const env = { ...process.env, ...workspace.env, CRASH_CONFIG: workspace.configPath, CRASH_LOCK: workspace.lockPath };
    const dataDirectory = join(workspace.directory, '.gateway');
    const start = async (): Promise<{ process: ChildProcess; client: Client }> => {
      const gateway = fork(child, [], { env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      started.push(gateway);
      const mcpUrl = await new Promise<string>((resolve, reject) => {
        gateway.once('message', (message: { mcpUrl: string }) => resolve(message.mcpUrl));
        gateway.once('exit', (code) => reject(new Error(`gateway exited ${code} before it was ready`)));
      });
      const client = new Client({ name: 'journal-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
      return { process: gateway, client };
    };
    const call = (client: Client, orderId: string) => client.callTool({ name: 'get_order', arguments: { orderId } });

    const first = await start();
    // Opened once the gateway has made the database.
    const database = new Database(join(dataDirectory, 'gateway.db'));
    const countReceipts = () => database.prepare('SELECT COUNT(*) FROM receipts').pluck().get() as number;
    await call(first.client, 'ord_1001');
    await waitFor(() => countReceipts() === 1, 'the first receipt in the database', 10_000);

    // Another process holds the write lock: the next call is answered all the same, its receipt in the journal.
    database.prepare('BEGIN IMMEDIATE').run();
    const answered = await call(first.client, 'ord_1002');
    expect(answered.isError).not.toBe(true);
    const journalled = readFileSync(join(dataDirectory, 'receipts-journal-main.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { seq: number; draft: { tool: string; outcome: string } });
    expect(journalled.at(-1)).toMatchObject({ draft: { tool: 'get_order', outcome: 'allowed' } });
    const exited = new Promise((resolve) => first.process.once('exit', resolve));
    first.process.kill('SIGKILL');
    await exited;
    database.prepare('ROLLBACK').run();
    expect(countReceipts()).toBe(1);

    // The next start in the slot moves it in, with its event; the journal's lock left by the killed process is
    // taken over.
    const second = await start();
    await waitFor(() => countReceipts() === 2, 'the journalled receipt in the database', 10_000);
    // Delivered at least once each (an event in flight at the kill may come again, under the same id).
    const deliveredReceipts = () =>
      [
        ...new Set(
          receiver!.requests
            .filter((request) => request.status === 200)
            .map((request) => (JSON.parse(request.body) as { data: { receipt: string } }).data.receipt),
        ),
      ].sort();
    await waitFor(() => deliveredReceipts().length === 2, 'both events', 10_000);
    const receipt = database.prepare('SELECT body FROM receipts WHERE leaf_index = 1').pluck().get() as string;
    expect(JSON.parse(receipt)).toMatchObject({ id: 'receipt-1', tool: 'get_order', outcome: 'allowed', session: 'session-5' });
    expect(deliveredReceipts()).toEqual(['receipt-0', 'receipt-1']);
    await second.client.close();
    database.close();

    const verified = await runGateway(['receipts', 'verify'], { cwd: workspace.directory, env: workspace.env });
    expect(verified.exitCode, `${String(verified.stdout)}\n${String(verified.stderr)}`).toBe(0);
    second.process.kill('SIGKILL');
  }, 60_000);

  it('with receipts.journal: false a call is answered once its receipt has committed; a journal left from before is moved in', async () => {
    await workspace?.cleanup();
    workspace = await prepareWorkspace({ configExtra: 'receipts:\n  journal: false' });
    const env = { ...process.env, ...workspace.env, CRASH_CONFIG: workspace.configPath, CRASH_LOCK: workspace.lockPath };
    const dataDirectory = join(workspace.directory, '.gateway');
    // An earlier start with the journal left one receipt in it.
    mkdirSync(dataDirectory, { recursive: true });
    const key = journalKeyOf(workspace.env.GATEWAY_SECRET_RECEIPTS_DIGEST_KEY!);
    writeFileSync(join(dataDirectory, 'receipts-journal-main.jsonl'), journalText(key, 'main', [receiptDraft('left_in_the_journal')]));
    const gateway = fork(child, [], { env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    started.push(gateway);
    const mcpUrl = await new Promise<string>((resolve, reject) => {
      gateway.once('message', (message: { mcpUrl: string }) => resolve(message.mcpUrl));
      gateway.once('exit', (code) => reject(new Error(`gateway exited ${code} before it was ready`)));
    });
    const database = new Database(join(dataDirectory, 'gateway.db'));
    const tools = () => database.prepare('SELECT tool FROM receipts ORDER BY leaf_index').pluck().all() as string[];
    expect(tools()).toEqual(['left_in_the_journal']);
    expect(readdirSync(dataDirectory).filter((name) => name.startsWith('receipts-journal-'))).toEqual([]);

    const client = new Client({ name: 'journal-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
    // While another process holds the write lock, the call is not answered: it waits for its receipt's commit.
    database.prepare('BEGIN IMMEDIATE').run();
    let answeredAt: number | undefined;
    const answer = client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }).then((result) => {
      answeredAt = Date.now();
      return result;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(answeredAt).toBeUndefined();
    const releasedAt = Date.now();
    database.prepare('ROLLBACK').run();
    expect((await answer).isError).not.toBe(true);
    expect(answeredAt!).toBeGreaterThanOrEqual(releasedAt);
    expect(tools()).toEqual(['left_in_the_journal', 'get_order']);
    expect(readdirSync(dataDirectory).filter((name) => name.startsWith('receipts-journal-'))).toEqual([]);
    await client.close();
    database.close();
    gateway.kill('SIGKILL');
  }, 60_000);

  it('a line added to the journal while the gateway is stopped is quarantined and logged; the genuine ones move in, in order', async () => {
    await workspace?.cleanup();
    workspace = await prepareWorkspace();
    const env = {
      ...process.env,
      ...workspace.env,
      CRASH_CONFIG: workspace.configPath,
      CRASH_LOCK: workspace.lockPath,
      CRASH_LOG_LEVEL: 'info',
    };
    const dataDirectory = join(workspace.directory, '.gateway');
    const journalPath = join(dataDirectory, 'receipts-journal-main.jsonl');
    const start = async (): Promise<{ process: ChildProcess; client: Client; log: () => Array<Record<string, unknown>> }> => {
      const gateway = fork(child, [], { env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      started.push(gateway);
      let output = '';
      gateway.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
      });
      const mcpUrl = await new Promise<string>((resolve, reject) => {
        gateway.once('message', (message: { mcpUrl: string }) => resolve(message.mcpUrl));
        gateway.once('exit', (code) => reject(new Error(`gateway exited ${code} before it was ready`)));
      });
      const client = new Client({ name: 'journal-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
      const log = () =>
        output
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      return { process: gateway, client, log };
    };
    const call = (client: Client, orderId: string) => client.callTool({ name: 'get_order', arguments: { orderId } });

    const first = await start();
    const database = new Database(join(dataDirectory, 'gateway.db'));
    const receipts = () =>
      (database.prepare('SELECT body FROM receipts ORDER BY leaf_index').pluck().all() as string[]).map(
        (body) => JSON.parse(body) as { tool: string; argumentsDigest: string; time: string },
      );
    await call(first.client, 'ord_1001');
    await waitFor(() => receipts().length === 1, 'the first receipt in the database', 10_000);
    // Two calls answered while another process holds the write lock: their receipts are in the journal only.
    database.prepare('BEGIN IMMEDIATE').run();
    await call(first.client, 'ord_1002');
    await call(first.client, 'ord_1003');
    // The journal still holds the first receipt's line (moved in already, covered by the mark), then the two.
    const genuine = readFileSync(journalPath, 'utf8').split('\n').filter(Boolean);
    expect(genuine.map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([1, 2, 3]);
    const exited = new Promise((resolve) => first.process.once('exit', resolve));
    first.process.kill('SIGKILL');
    await exited;
    database.prepare('ROLLBACK').run();

    // While it is stopped, someone edits the journal: a receipt for a tool never published nor called between the
    // genuine lines not yet moved in (the shape of a line without a MAC), and a copy of one of them at the end.
    const forged = JSON.stringify({ seq: 3, draft: { ...JSON.parse(genuine[1]!).draft, tool: 'admin_purge' } });
    writeFileSync(journalPath, `${[genuine[0], genuine[1], forged, genuine[2], genuine[1]].join('\n')}\n`);

    const second = await start();
    await waitFor(() => receipts().length === 3, 'the journalled receipts in the database', 10_000);
    const moved = genuine.slice(1).map((line) => (JSON.parse(line) as { draft: { argumentsDigest: string; time: string } }).draft);
    expect(receipts().map((receipt) => receipt.tool)).toEqual(['get_order', 'get_order', 'get_order']);
    expect(
      receipts()
        .slice(1)
        .map(({ argumentsDigest, time }) => ({ argumentsDigest, time })),
    ).toEqual(moved.map(({ argumentsDigest, time }) => ({ argumentsDigest, time })));
    // Never in the database, so in no checkpoint: the one signed at the start covers the three genuine receipts.
    expect(database.prepare("SELECT COUNT(*) FROM receipts WHERE tool = 'admin_purge'").pluck().get()).toBe(0);
    expect(database.prepare('SELECT MAX(tree_size) FROM receipt_checkpoints').pluck().get()).toBe(3);
    expect(readFileSync(join(dataDirectory, 'receipts-journal-main.quarantine.jsonl'), 'utf8')).toBe(`${forged}\n${genuine[1]}\n`);
    const quarantined = () => second.log().find((line) => line.code === 'RECEIPT_JOURNAL_LINE_QUARANTINED');
    await waitFor(() => quarantined() !== undefined, 'the quarantine in the log', 10_000);
    expect(quarantined()).toMatchObject({ level: 50, journal: 'main', lines: 2, reasons: { 'missing-mac': 1, replayed: 1 } });
    await second.client.close();
    database.close();

    const verified = await runGateway(['receipts', 'verify'], { cwd: workspace.directory, env: workspace.env });
    expect(verified.exitCode, `${String(verified.stdout)}\n${String(verified.stderr)}`).toBe(0);
    second.process.kill('SIGKILL');
  }, 60_000);
});
