/**
 * A fork of the receipt log shown by the checkpoints a receiver kept. A real gateway (file vault) delivers each
 * signed checkpoint as an `io.service.receipts.checkpoint` event to an endpoint subscribed with `types:`; the
 * receiver, on 127.0.0.1, verifies each delivery's Standard Webhooks signature and appends the checkpoint
 * events' bodies to a file, one per line (docs/webhooks.md). `gateway receipts verify --checkpoints <file>`
 * passes. Then someone who holds the database and the signing key rewrites a receipt between the two
 * checkpoints, signs the rewritten history with the gateway's own key, deletes the old checkpoint rows and
 * replaces the anchor (file and vault copy): the gateway starts over it and its log verifies on its own, but
 * `verify --checkpoints` fails (exit 6) naming the collected checkpoint the log is no longer consistent with.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { HTTP, type CloudEvent } from 'cloudevents';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  appendToEdge,
  formatCheckpoint,
  leafHash,
  loadConfig,
  privateKeyFromPem,
  rawPublicKey,
  receiptLeafText,
  rootOfEdge,
  signNote,
  verifierKey,
  type Receipt,
} from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { RECEIPTS_ANCHOR_FILE, RECEIPTS_ANCHOR_SECRET } from '../src/receipts/anchor.js';
import { RECEIPTS_SIGNING_KEY_SECRET } from '../src/receipts/log.js';
import { allowAll, prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const ADMIN_TOKEN = 'fork-admin-token-41c7';
const RECEIPTED = 'io.service.call.receipted';
const CHECKPOINT = 'io.service.receipts.checkpoint';
/** Two checkpoints: after receipt-2 (size 3) and after receipt-5 (size 6). */
const EVERY = 3;
const CALLS = 6;
const webhookSecret = newWebhookSecret();

let workspace: Workspace;
let receiver: WebhookReceiver;
let vault: Vault;
let collectedPath: string;
let dataDirectory: string;
/** Deliveries whose signature did not verify (the receiver answered 401). */
let unsigned = 0;

/** What the receiver in docs/webhooks.md does: verify, then append each checkpoint event once, in sequence order. */
function keepCheckpoints(request: { headers: IncomingHttpHeaders; body: string }): { status: number } {
  let lastSequence = 0n;
  if (existsSync(collectedPath)) {
    const last = readFileSync(collectedPath, 'utf8').trim().split('\n').at(-1);
    if (last) lastSequence = BigInt((JSON.parse(last) as { sequence: string }).sequence);
  }
  try {
    new Webhook(webhookSecret).verify(request.body, request.headers as Record<string, string>);
  } catch {
    unsigned += 1;
    return { status: 401 };
  }
  const event = HTTP.toEvent({ headers: request.headers, body: request.body }) as CloudEvent<unknown>;
  if (BigInt(event.sequence as string) > lastSequence && event.type === CHECKPOINT) {
    appendFileSync(collectedPath, `${JSON.stringify(JSON.parse(request.body))}\n`);
  }
  return { status: 204 };
}

function start(): Promise<RunningGateway> {
  return startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
}

async function cli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const result = await runGateway(args, { cwd: workspace.directory, env: workspace.env, timeout: 120_000 });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

function collected(): Array<{ id: string; type: string; data: { treeSize: number; note: string } }> {
  if (!existsSync(collectedPath)) return [];
  return readFileSync(collectedPath, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: string; type: string; data: { treeSize: number; note: string } });
}

beforeAll(async () => {
  receiver = await startWebhookReceiver((request) => keepCheckpoints(request));
  workspace = await prepareWorkspace({
    configExtra: [
      'receipts:',
      `  checkpoint: { everyReceipts: ${EVERY}, everySeconds: 3600 }`,
      'webhooks:',
      '  anchor:',
      `    url: ${receiver.url}`,
      '    secret: anchor-webhook-secret',
      `    types: [${RECEIPTED}, ${CHECKPOINT}]`,
    ].join('\n'),
  });
  collectedPath = join(workspace.directory, 'collected-checkpoints.jsonl');
  dataDirectory = join(workspace.directory, '.gateway');
  // The file vault: the gateway keeps its signing key and the anchor's vault copy there.
  const config = await readFile(workspace.configPath, 'utf8');
  writeFileSync(workspace.configPath, config.replace('vault:\n  provider: env', 'vault:\n  provider: file'));
  vault = await createVault(await loadConfig(workspace.configPath), { env: {} });
  await vault.set('orders-api-key', workspace.env.GATEWAY_SECRET_ORDERS_API_KEY!);
  await vault.set('admin-token', ADMIN_TOKEN);
  await vault.set('anchor-webhook-secret', webhookSecret);
}, 180_000);

afterAll(async () => {
  await receiver?.close();
  await workspace?.cleanup();
});

describe('a fork between two checkpoints a receiver kept', () => {
  it('verify --checkpoints passes on the honest log, then names the checkpoint a re-signed rewrite is not consistent with', async () => {
    const gateway = await start();
    try {
      const client = new Client({ name: 'fork-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
      );
      for (let index = 0; index < CALLS; index += 1) {
        await client.callTool({ name: 'get_order', arguments: { orderId: `ord_${1000 + index}` } });
      }
      await client.close();
      await waitFor(() => collected().length === 2, 'two checkpoint events at the receiver', 60_000);
      expect(unsigned).toBe(0);
      expect(collected().map((event) => [event.type, event.data.treeSize])).toEqual([
        [CHECKPOINT, EVERY],
        [CHECKPOINT, 2 * EVERY],
      ]);
      // The receipt events came through the same stream (the receiver skipped them).
      expect(receiver.requests.filter((request) => request.body.includes(`"type":"${RECEIPTED}"`))).toHaveLength(CALLS);

      const honest = await cli(['receipts', 'verify', '--checkpoints', collectedPath]);
      expect(honest.exitCode, honest.stdout + honest.stderr).toBe(0);
      expect(honest.stdout).toContain('2 collected checkpoints consistent');
    } finally {
      await gateway.close();
    }

    // Someone with the database and the signing key rewrites receipt-4 (between the checkpoints of sizes 3 and 6).
    const signingKey = privateKeyFromPem((await vault.get(RECEIPTS_SIGNING_KEY_SECRET))!);
    const database = new Database(join(dataDirectory, 'gateway.db'));
    let origin: string;
    let forgedAnchor: string;
    try {
      const body = database.prepare('SELECT body FROM receipts WHERE leaf_index = 4').pluck().get() as string;
      const forged = { ...(JSON.parse(body) as Receipt), person: 'mallory@example.com' } as Receipt;
      const text = receiptLeafText(forged);
      database
        .prepare('UPDATE receipts SET body = ?, leaf_hash = ?, person = ? WHERE leaf_index = 4')
        .run(text, leafHash(text), forged.person);
      let edge: Buffer[] = [];
      const edges = new Map<number, Buffer[]>();
      const hashes = database.prepare('SELECT leaf_hash FROM receipts ORDER BY leaf_index').pluck().all() as Buffer[];
      expect(hashes).toHaveLength(CALLS);
      for (const [index, hash] of hashes.entries()) {
        edge = appendToEdge(edge, index, hash);
        edges.set(index + 1, edge);
      }
      database.prepare('UPDATE receipt_tree SET size = ?, edge = ? WHERE id = 1').run(hashes.length, Buffer.concat(edge));
      // The old checkpoints go; the rewritten history is signed with the gateway's own key.
      const old = database.prepare('SELECT note FROM receipt_checkpoints ORDER BY tree_size').pluck().all() as string[];
      expect(old).toHaveLength(2);
      origin = old[0]!.split('\n')[0]!;
      database.prepare('DELETE FROM receipt_checkpoints').run();
      const insert = database.prepare(
        'INSERT INTO receipt_checkpoints (tree_size, root_hash, note, verifier_key, created_at) VALUES (?, ?, ?, ?, ?)',
      );
      const publicKey = verifierKey(origin, rawPublicKey(signingKey));
      for (const size of [EVERY, 2 * EVERY]) {
        const rootHash = rootOfEdge(edges.get(size)!);
        const note = signNote(formatCheckpoint({ origin, size, rootHash }), origin, signingKey);
        insert.run(size, rootHash, note, publicKey, new Date().toISOString());
        if (size === 2 * EVERY) {
          forgedAnchor = `${JSON.stringify({
            treeSize: size,
            rootHash: rootHash.toString('base64'),
            note,
            edge: edges.get(size)!.map((hash) => hash.toString('base64')),
          })}\n`;
        }
      }
    } finally {
      database.close();
    }
    // …and the anchor, both copies, so that the gateway itself accepts the rewritten database.
    writeFileSync(join(dataDirectory, RECEIPTS_ANCHOR_FILE), forgedAnchor!);
    await vault.set(RECEIPTS_ANCHOR_SECRET, forgedAnchor!);

    const forkedGateway = await start();
    try {
      // On this host, nothing shows it: the log verifies against its own (re-signed) checkpoints.
      const alone = await cli(['receipts', 'verify']);
      expect(alone.exitCode, alone.stdout + alone.stderr).toBe(0);

      // The checkpoints the receiver kept show the fork, naming the one the log no longer matches.
      const against = await cli(['receipts', 'verify', '--checkpoints', collectedPath, '--json']);
      expect(against.exitCode, against.stdout + against.stderr).toBe(6);
      const report = JSON.parse(against.stdout) as {
        ok: boolean;
        collectedVerified: number;
        firstBrokenReceipt: string;
        problems: string[];
      };
      expect(report).toMatchObject({ ok: false, collectedVerified: 1, firstBrokenReceipt: `receipt-${EVERY}` });
      const [first, second] = collected();
      expect(report.problems.join('\n')).not.toContain(`checkpoint event ${first!.id}`);
      expect(report.problems[0]).toContain(`checkpoint event ${second!.id} (tree size ${2 * EVERY}): the log is not consistent with it`);
      expect(report.problems[0]).toContain(`rewritten in receipt-${EVERY}..receipt-${2 * EVERY - 1}`);
      expect(second!.id).toBe(`evt_checkpoint-${2 * EVERY}_anchor`);
    } finally {
      await forkedGateway.close();
    }
  }, 300_000);
});
