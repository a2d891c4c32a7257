/**
 * The receipt log against its own database, on real files: someone who can write `gateway.db` (and even the data
 * directory) but holds no key rewrites receipt 7, recomputes the leaf hashes and the tree head, deletes the
 * checkpoints, or re-signs the whole log with a key of their own under the same origin. `gateway receipts
 * verify` fails, and the restarted gateway (`gateway serve`, the built binary) stops with
 * RECEIPTS_ANCHOR_MISMATCH naming the size of the last checkpoint it signed, instead of signing the altered
 * history. Unsigned receipts past the bound fail `verify`, and `verify --checkpoints` names a checkpoint a
 * receiver collected that a rewritten (even re-signed) log no longer matches.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  appendToEdge,
  formatCheckpoint,
  leafHash,
  parseCheckpoint,
  privateKeyFromPem,
  rawPublicKey,
  receiptLeafText,
  rootOfEdge,
  signNote,
  verifierKey,
  type Receipt,
} from '@gateway/core';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll, prepareWorkspace, receiptSigningKeyPem, type Workspace } from './support/harness.js';

const ADMIN_TOKEN = 'anchor-admin-token-5e2a';
const RECEIPTS = 10;
const signingPem = receiptSigningKeyPem();

let workspace: Workspace;
let dataDirectory: string;
/** The data directory after ten honest calls, restored before each attack. */
let pristine: string;
let origin: string;

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
  return runGateway(args, { cwd: workspace.directory, env: workspace.env, timeout: 120_000 });
}

beforeAll(async () => {
  workspace = await prepareWorkspace({ configExtra: 'receipts:\n  checkpoint: { everyReceipts: 4, everySeconds: 3600 }' });
  // The env vault cannot store a signing key: the operator gives one, so it is the same key after a restart.
  Object.assign(workspace.env, { GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN, GATEWAY_SECRET_RECEIPTS_SIGNING_KEY: signingPem });
  dataDirectory = join(workspace.directory, '.gateway');
  const gateway = await start();
  try {
    const client = new Client({ name: 'anchor-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
    );
    for (let index = 0; index < RECEIPTS; index += 1)
      await client.callTool({ name: 'get_order', arguments: { orderId: `ord_${1000 + index}` } });
    await client.close();
    const deadline = Date.now() + 10_000;
    while ((await gateway.receipts!.store.head()).size < RECEIPTS && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    origin = gateway.receipts!.origin;
  } finally {
    await gateway.close();
  }
  pristine = join(workspace.directory, 'pristine');
  cpSync(dataDirectory, pristine, { recursive: true });
}, 180_000);

afterAll(async () => {
  await workspace?.cleanup();
});

function restorePristine(): void {
  rmSync(dataDirectory, { recursive: true, force: true });
  cpSync(pristine, dataDirectory, { recursive: true });
}

/** What someone with the database file but no key does: receipt 7 rewritten, leaf hashes and tree head recomputed. */
function rewriteReceipt7(database: Database.Database): void {
  const body = database.prepare('SELECT body FROM receipts WHERE leaf_index = 7').pluck().get() as string;
  const receipt = {
    ...(JSON.parse(body) as Receipt),
    person: 'mallory@example.com',
    outcome: 'denied',
    reason: 'TOOL_NOT_IN_SESSION',
  } as Receipt;
  const text = receiptLeafText(receipt);
  database
    .prepare('UPDATE receipts SET body = ?, leaf_hash = ?, person = ?, outcome = ? WHERE leaf_index = 7')
    .run(text, leafHash(text), receipt.person, receipt.outcome);
  let edge: Buffer[] = [];
  const hashes = database.prepare('SELECT leaf_hash FROM receipts ORDER BY leaf_index').pluck().all() as Buffer[];
  for (const [index, hash] of hashes.entries()) edge = appendToEdge(edge, index, hash);
  database.prepare('UPDATE receipt_tree SET size = ?, edge = ? WHERE id = 1').run(hashes.length, Buffer.concat(edge));
}

/** The root of the first `size` leaves as the database now records them. */
function storedRoot(database: Database.Database, size: number): Buffer {
  let edge: Buffer[] = [];
  const hashes = database.prepare('SELECT leaf_hash FROM receipts WHERE leaf_index < ? ORDER BY leaf_index').pluck().all(size) as Buffer[];
  for (const [index, hash] of hashes.entries()) edge = appendToEdge(edge, index, hash);
  return rootOfEdge(edge);
}

function anchorFile(): { treeSize: number; note: string } {
  return JSON.parse(readFileSync(join(dataDirectory, 'receipts-anchor.json'), 'utf8')) as { treeSize: number; note: string };
}

/** `gateway serve` after the attack: it must stop before it signs anything. */
async function restart(): Promise<{ exitCode: number; stderr: string }> {
  const result = await cli(['serve']);
  return { exitCode: result.exitCode, stderr: result.stderr };
}

describe('the anchor: the last signed checkpoint kept outside the database', () => {
  it('is written to the data directory with each checkpoint, and equals the database’s latest', () => {
    const database = new Database(join(pristine, 'gateway.db'), { readonly: true });
    try {
      const latest = database.prepare('SELECT tree_size, note FROM receipt_checkpoints ORDER BY tree_size DESC LIMIT 1').get() as {
        tree_size: number;
        note: string;
      };
      expect(latest.tree_size).toBe(RECEIPTS);
      const anchor = JSON.parse(readFileSync(join(pristine, 'receipts-anchor.json'), 'utf8')) as { treeSize: number; note: string };
      expect(anchor).toMatchObject({ treeSize: RECEIPTS, note: latest.note });
    } finally {
      database.close();
    }
  });

  it('checkpoints deleted, receipt 7 rewritten with leaf hash and tree head: verify fails, the restart stops naming size 10', async () => {
    restorePristine();
    const gateway = await start();
    try {
      const database = new Database(join(dataDirectory, 'gateway.db'));
      try {
        database.prepare('DELETE FROM receipt_checkpoints').run();
        rewriteReceipt7(database);
      } finally {
        database.close();
      }
      const verified = await cli(['receipts', 'verify']);
      expect(verified.exitCode, verified.stdout + verified.stderr).toBe(6);
      expect(verified.stdout).toContain('receipt log BROKEN');
      expect(verified.stdout).toContain(`the signed checkpoint of size ${RECEIPTS} does not match`);
    } finally {
      await gateway.close();
    }
    const restarted = await restart();
    expect(restarted.exitCode, restarted.stderr).toBe(6);
    expect(restarted.stderr).toContain('RECEIPTS_ANCHOR_MISMATCH');
    expect(restarted.stderr).toContain(`signed checkpoint of size ${RECEIPTS}`);
    expect(restarted.stderr).toContain('receipt-0..receipt-7');
    // Nothing was signed over the rewritten history.
    const database = new Database(join(dataDirectory, 'gateway.db'), { readonly: true });
    try {
      expect(database.prepare('SELECT COUNT(*) FROM receipt_checkpoints').pluck().get()).toBe(0);
    } finally {
      database.close();
    }
    expect(anchorFile().treeSize).toBe(RECEIPTS);
  }, 180_000);

  it('the whole log re-signed with another key, same origin (database and anchor file): verify fails, the restart stops', async () => {
    restorePristine();
    const gateway = await start();
    const forger: KeyObject = generateKeyPairSync('ed25519').privateKey;
    const forgerKey = verifierKey(origin, rawPublicKey(forger));
    try {
      const database = new Database(join(dataDirectory, 'gateway.db'));
      try {
        rewriteReceipt7(database);
        database.prepare('DELETE FROM receipt_checkpoints').run();
        for (const size of [4, 8, RECEIPTS]) {
          const rootHash = storedRoot(database, size);
          const note = signNote(formatCheckpoint({ origin, size, rootHash }), origin, forger);
          database
            .prepare('INSERT INTO receipt_checkpoints (tree_size, root_hash, note, verifier_key, created_at) VALUES (?, ?, ?, ?, ?)')
            .run(size, rootHash, note, forgerKey, new Date().toISOString());
          if (size === RECEIPTS) {
            writeFileSync(
              join(dataDirectory, 'receipts-anchor.json'),
              `${JSON.stringify({ treeSize: size, rootHash: rootHash.toString('base64'), note })}\n`,
            );
          }
        }
      } finally {
        database.close();
      }
      const verified = await cli(['receipts', 'verify']);
      expect(verified.exitCode, verified.stdout + verified.stderr).toBe(6);
      expect(verified.stdout).toContain(`is signed by no trusted key (it names ${forgerKey})`);
      // The export names the forger's key beside each checkpoint; `--file` trusts only the vault's and the config's.
      const exportPath = join(workspace.directory, 'forged-export.jsonl');
      expect((await cli(['receipts', 'export', '--out', exportPath])).exitCode).toBe(0);
      expect(readFileSync(exportPath, 'utf8')).toContain(forgerKey);
      const fromFile = await cli(['receipts', 'verify', '--file', exportPath]);
      expect(fromFile.exitCode, fromFile.stdout + fromFile.stderr).toBe(6);
      expect(fromFile.stdout).toContain('signed by no trusted key');
    } finally {
      await gateway.close();
    }
    const restarted = await restart();
    expect(restarted.exitCode, restarted.stderr).toBe(6);
    expect(restarted.stderr).toContain('RECEIPTS_ANCHOR_MISMATCH');
    expect(restarted.stderr).toContain('not signed by a trusted key');
  }, 180_000);
});

describe('receipts without a checkpoint', () => {
  it('past the bound (receipts.checkpoint.everyReceipts) fail `verify --file`; within it, OK, saying how many wait', async () => {
    restorePristine();
    const gateway = await start();
    const exportPath = join(workspace.directory, 'export.jsonl');
    try {
      expect((await cli(['receipts', 'export', '--out', exportPath])).exitCode).toBe(0);
    } finally {
      await gateway.close();
    }
    const lines = readFileSync(exportPath, 'utf8').trim().split('\n');
    const keeping = (largest: number) => {
      const path = join(workspace.directory, `export-upto-${largest}.jsonl`);
      const kept = lines.filter((line) => {
        const entry = JSON.parse(line) as { type: string; treeSize?: number };
        return entry.type !== 'checkpoint' || entry.treeSize! <= largest;
      });
      writeFileSync(path, `${kept.join('\n')}\n`);
      return path;
    };
    const none = await cli(['receipts', 'verify', '--file', keeping(0)]);
    expect(none.exitCode, none.stdout + none.stderr).toBe(6);
    expect(none.stdout).toContain(`${RECEIPTS} receipts without a checkpoint`);
    const past = await cli(['receipts', 'verify', '--file', keeping(4)]);
    expect(past.exitCode, past.stdout + past.stderr).toBe(6);
    expect(past.stdout).toContain(`${RECEIPTS - 4} receipts without a checkpoint (receipt-4..receipt-9): at most 4 may wait`);
    const within = await cli(['receipts', 'verify', '--file', keeping(8)]);
    expect(within.exitCode, within.stdout + within.stderr).toBe(0);
    expect(within.stdout).toContain(`receipt log OK`);
    expect(within.stdout).toContain(`(${RECEIPTS - 8} receipts after the last one)`);
  }, 120_000);
});

describe('gateway receipts verify --checkpoints', () => {
  /** Checkpoint events as a receiver stores them: one structured CloudEvent per line, with other events between. */
  function collectedEvents(checkpoints: Array<{ treeSize: number; note: string }>): string {
    const lines: string[] = [];
    for (const checkpoint of checkpoints) {
      const parsed = parseCheckpoint(checkpoint.note.slice(0, checkpoint.note.lastIndexOf('\n\n') + 1))!;
      lines.push(
        JSON.stringify({
          specversion: '1.0',
          id: `evt-checkpoint-${checkpoint.treeSize}`,
          source: 'service/audit',
          type: 'io.service.receipts.checkpoint',
          data: { origin: parsed.origin, treeSize: parsed.size, rootHash: parsed.rootHash.toString('base64'), note: checkpoint.note },
        }),
        JSON.stringify({
          specversion: '1.0',
          id: `evt-call-${checkpoint.treeSize}`,
          source: 'service/audit',
          type: 'io.service.call.receipted',
          data: {},
        }),
      );
    }
    return `${lines.join('\n')}\n`;
  }

  it('names the collected checkpoint a log rewritten between two of them (re-signed with the gateway’s key) does not match', async () => {
    restorePristine();
    const gateway = await start();
    const exportPath = join(workspace.directory, 'honest.jsonl');
    const collectedPath = join(workspace.directory, 'collected.jsonl');
    try {
      expect((await cli(['receipts', 'export', '--out', exportPath])).exitCode).toBe(0);
      const exported = readFileSync(exportPath, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const checkpoints = exported.filter((entry) => entry.type === 'checkpoint') as Array<{ treeSize: number; note: string }>;
      expect(checkpoints.map((checkpoint) => checkpoint.treeSize)).toEqual([4, 8, RECEIPTS]);
      writeFileSync(collectedPath, collectedEvents(checkpoints));
      // The running gateway's log against what the receiver collected: consistent.
      const honest = await cli(['receipts', 'verify', '--checkpoints', collectedPath]);
      expect(honest.exitCode, honest.stdout + honest.stderr).toBe(0);
      expect(honest.stdout).toContain('3 collected checkpoints consistent');
    } finally {
      await gateway.close();
    }

    // Someone with the database and the signing key rewrites receipt 5 (between the checkpoints of sizes 4 and 8)
    // and signs the whole log again: on its own, the log verifies.
    const key = privateKeyFromPem(signingPem);
    const entries = readFileSync(exportPath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const receipts = entries.filter((entry) => entry.type === 'receipt').map((entry) => entry.receipt as Receipt);
    receipts[5] = { ...receipts[5]!, person: 'mallory@example.com' };
    expect(receipts[5]).not.toEqual(entries.find((entry) => entry.type === 'receipt' && (entry.receipt as Receipt).index === 5)!.receipt);
    let edge: Buffer[] = [];
    const roots = new Map<number, Buffer>();
    for (const [index, receipt] of receipts.entries()) {
      edge = appendToEdge(edge, index, leafHash(receiptLeafText(receipt)));
      roots.set(index + 1, rootOfEdge(edge));
    }
    const forked = [
      ...entries.filter((entry) => entry.type === 'key').map((entry) => JSON.stringify(entry)),
      ...receipts.map((receipt) =>
        JSON.stringify({ type: 'receipt', leafHash: leafHash(receiptLeafText(receipt)).toString('base64'), receipt }),
      ),
      ...[4, 8, RECEIPTS].map((size) =>
        JSON.stringify({
          type: 'checkpoint',
          treeSize: size,
          note: signNote(formatCheckpoint({ origin, size, rootHash: roots.get(size)! }), origin, key),
          verifierKey: verifierKey(origin, rawPublicKey(key)),
        }),
      ),
    ];
    const forkedPath = join(workspace.directory, 'forked.jsonl');
    writeFileSync(forkedPath, `${forked.join('\n')}\n`);
    const alone = await cli(['receipts', 'verify', '--file', forkedPath]);
    expect(alone.exitCode, alone.stdout + alone.stderr).toBe(0);

    const against = await cli(['receipts', 'verify', '--file', forkedPath, '--checkpoints', collectedPath, '--json']);
    expect(against.exitCode, against.stdout + against.stderr).toBe(6);
    const report = JSON.parse(against.stdout) as { ok: boolean; collectedVerified: number; firstBrokenReceipt: string; problems: string[] };
    expect(report).toMatchObject({ ok: false, collectedVerified: 1, firstBrokenReceipt: 'receipt-4' });
    expect(report.problems[0]).toContain('checkpoint event evt-checkpoint-8 (tree size 8): the log is not consistent with it');
    expect(report.problems[0]).toContain('receipt-4..receipt-7');
    expect(report.problems.join('\n')).toContain('checkpoint event evt-checkpoint-10 (tree size 10)');
  }, 180_000);

  it('a line that is not JSON is an error naming its line (RECEIPTS_CHECKPOINTS_INVALID, exit 2)', async () => {
    const badPath = join(workspace.directory, 'bad-checkpoints.jsonl');
    writeFileSync(badPath, '{"type":"io.service.call.receipted","id":"a","data":{}}\n{"type": "io.service.receipts.checkpoint",\n');
    const result = await cli(['receipts', 'verify', '--file', join(workspace.directory, 'honest.jsonl'), '--checkpoints', badPath]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('RECEIPTS_CHECKPOINTS_INVALID');
    expect(result.stderr).toContain(`line 2 of ${badPath} is not JSON`);
  });
});
