/**
 * Receipts end to end: calls through /mcp with SDK clients of both eras, read back with the CLI
 * (`gateway receipts …` as a subprocess, over the admin API); refusals receipted with their reason; a
 * tampered or deleted receipt named by `receipts verify`; and an inclusion proof plus a signed checkpoint
 * verified from an export with node:crypto alone (RFC 9162 §2.1, C2SP signed-note), not the project's code.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import type { McpAuthorizer, McpCaller } from '../src/calls/caller.js';
import { prepareWorkspace, receiptSigningKeyPem, type Workspace } from './support/harness.js';

const ADMIN_TOKEN = 'receipts-admin-token-4c1d';
/** The session may call these tools only: `delete_order` is outside it. */
const SESSION_TOOLS = ['get_order', 'search_orders', 'create_order'];

let workspace: Workspace;
let gateway: RunningGateway;

beforeAll(async () => {
  workspace = await prepareWorkspace({ configExtra: 'receipts:\n  checkpoint: { everyReceipts: 3, everySeconds: 3600 }' });
  workspace.env.GATEWAY_SECRET_ADMIN_TOKEN = ADMIN_TOKEN;
  // A signing key kept across processes (the env vault cannot store one): `verify --file` trusts it, read from
  // the vault as the gateway reads it, never from the export.
  workspace.env.GATEWAY_SECRET_RECEIPTS_SIGNING_KEY = receiptSigningKeyPem();
  const authorizer = ({ registry }: { registry: RunningGateway['registry'] }): McpAuthorizer => ({
    async authenticate() {
      const snapshot = registry.snapshot();
      const tools = new Map<string, string>();
      for (const name of SESSION_TOOLS) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
      const caller: McpCaller = {
        sessionId: 'session-7',
        subject: 'alice@example.com',
        clientId: 'client-receipts',
        tools,
        logins: new Set(['orders/api_key']),
        expiresAt: Date.now() + 3_600_000,
      };
      return { ok: true, caller };
    },
    sessionState: () => 'open',
  });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: authorizer,
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
});

type Call = (name: string, args: Record<string, unknown>) => Promise<{ isError?: boolean; content: unknown[] }>;

async function connect(era: 'modern' | 'legacy'): Promise<{ call: Call; close(): Promise<void> }> {
  const headers = { authorization: 'Bearer client-token' };
  if (era === 'modern') {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
  }
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
  return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
}

async function cli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const result = await runGateway(args, { cwd: workspace.directory, env: workspace.env });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** Receipts written so far, read through the running gateway's log. */
async function receiptCount(): Promise<number> {
  return (await gateway.receipts!.store.head()).size;
}

async function newestReceipt(): Promise<Record<string, unknown>> {
  const listed = await cli(['receipts', 'list', '--limit', '1000', '--json']);
  expect(listed.exitCode, listed.stderr).toBe(0);
  const receipts = (JSON.parse(listed.stdout) as { receipts: Array<Record<string, unknown>> }).receipts;
  expect(receipts).toHaveLength(await receiptCount());
  const shown = await cli(['receipts', 'show', String(receipts.at(-1)!.id), '--json']);
  expect(shown.exitCode, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as Record<string, unknown>;
}

describe.each(['modern', 'legacy'] as const)('through /mcp with a %s SDK client', (era) => {
  it('an allowed call is receipted with every field, exactly once, and `gateway receipts show` has it', async () => {
    const client = await connect(era);
    const before = await receiptCount();
    try {
      const result = await client.call('get_order', { orderId: 'ord_1001' });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    // Both eras take the fast path for an allowed call: one receipt, written by the one pipeline.
    expect(await receiptCount()).toBe(before + 1);
    const receipt = await newestReceipt();
    const snapshot = gateway.registry.snapshot();
    const tool = snapshot.tools.get('get_order')!;
    expect(receipt).toMatchObject({
      id: `receipt-${receipt.index as number}`,
      session: 'session-7',
      person: 'alice@example.com',
      clientId: 'client-receipts',
      tool: 'get_order',
      source: 'orders',
      publication: tool.publicationId,
      fingerprint: tool.entry.fingerprint,
      login: 'orders/api_key',
      outcome: 'allowed',
      reason: null,
      upstreamStatus: 200,
    });
    expect(receipt.argumentsDigest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(receipt.resultDigest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(receipt).not.toHaveProperty('arguments');
    expect(Date.now() - Date.parse(receipt.time as string)).toBeLessThan(60_000);
    // No secret in a receipt: neither the upstream key nor the argument value in clear.
    expect(JSON.stringify(receipt)).not.toContain('canary-orders-key');
    expect(JSON.stringify(receipt)).not.toContain('ord_1001');
  });

  it('a call of a tool outside the session is denied and receipted with TOOL_NOT_IN_SESSION, exactly once', async () => {
    const client = await connect(era);
    const before = await receiptCount();
    try {
      await expect(client.call('delete_order', { orderId: 'ord_1001' })).rejects.toThrow(/delete_order/);
    } finally {
      await client.close();
    }
    // The fast path leaves refusals to the SDK path: one receipt, not one per path.
    expect(await receiptCount()).toBe(before + 1);
    const receipt = await newestReceipt();
    expect(receipt).toMatchObject({
      tool: 'delete_order',
      outcome: 'denied',
      reason: 'TOOL_NOT_IN_SESSION',
      session: 'session-7',
      resultDigest: null,
    });
  });

  it('an unknown tool is receipted under the name as given, denied with TOOL_UNKNOWN', async () => {
    const client = await connect(era);
    try {
      await expect(client.call('no_such_tool', {})).rejects.toThrow(/no_such_tool/);
    } finally {
      await client.close();
    }
    expect(await newestReceipt()).toMatchObject({
      tool: 'no_such_tool',
      outcome: 'denied',
      reason: 'TOOL_UNKNOWN',
      source: null,
      fingerprint: null,
    });
  });

  it('a call of a drifted tool is denied and receipted with TOOL_BLOCKED_BY_DRIFT', async () => {
    gateway.registry.setBlocked('orders', new Map([['search_orders', 'the live description changed']]));
    const client = await connect(era);
    try {
      const result = await client.call('search_orders', { status: 'shipped' });
      expect(result.isError).toBe(true);
    } finally {
      await client.close();
      gateway.registry.setBlocked('orders', new Map());
    }
    expect(await newestReceipt()).toMatchObject({
      tool: 'search_orders',
      outcome: 'denied',
      reason: 'TOOL_BLOCKED_BY_DRIFT',
      source: 'orders',
    });
  });
});

describe('gateway receipts list', () => {
  async function listed(args: string[]): Promise<Array<Record<string, unknown>>> {
    const result = await cli(['receipts', 'list', ...args, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { receipts: Array<Record<string, unknown>> }).receipts;
  }

  it('filters by outcome, tool, session, person and time, oldest first', async () => {
    const denied = await listed(['--outcome', 'denied']);
    expect(denied.length).toBe(6);
    expect(new Set(denied.map((receipt) => receipt.outcome))).toEqual(new Set(['denied']));
    const byTool = await listed(['--tool', 'get_order', '--session', 'session-7', '--person', 'alice@example.com']);
    expect(byTool.map((receipt) => receipt.tool)).toEqual(['get_order', 'get_order']);
    expect(byTool[0]!.index as number).toBeLessThan(byTool[1]!.index as number);
    expect(await listed(['--person', 'nobody@example.com'])).toEqual([]);
    expect(await listed(['--since', new Date(Date.now() + 60_000).toISOString()])).toEqual([]);
    expect((await listed(['--until', new Date(Date.now() + 60_000).toISOString(), '--limit', '3'])).map((receipt) => receipt.id)).toEqual([
      'receipt-0',
      'receipt-1',
      'receipt-2',
    ]);
  });

  it('a malformed filter is refused with RECEIPT_FILTER_INVALID (exit 2)', async () => {
    const result = await cli(['receipts', 'list', '--outcome', 'maybe']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('RECEIPT_FILTER_INVALID');
  });
});

describe('the tamper-evident log', () => {
  it(
    'an inclusion proof and a checkpoint verify from an export with the public key alone (RFC 9162, C2SP signed-note, ' + 'node:crypto)',
    async () => {
      const exported = await cli(['receipts', 'export']);
      expect(exported.exitCode, exported.stderr).toBe(0);
      const lines = exported.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const keyLine = lines.find((line) => line.type === 'key')!;
      const receipts = lines.filter((line) => line.type === 'receipt').map((line) => line.receipt as Record<string, unknown>);
      const checkpointLine = lines.filter((line) => line.type === 'checkpoint').at(-1)!;
      expect(receipts.length).toBeGreaterThanOrEqual(8);

      // C2SP signed-note verifier key: <name>+<hex key ID>+<base64(0x01 || 32-byte Ed25519 key)>.
      // (The base64 part may itself contain '+': split at the first two only.)
      const [, name, keyIdHex, keyBase64] = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(keyLine.verifierKey as string) as unknown as [
        string,
        string,
        string,
        string,
      ];
      const keyBytes = Buffer.from(keyBase64, 'base64');
      expect(keyBytes[0]).toBe(0x01);
      const rawKey = keyBytes.subarray(1);
      const keyId = createHash('sha256')
        .update(name)
        .update(Buffer.from([0x0a, 0x01]))
        .update(rawKey)
        .digest()
        .subarray(0, 4);
      expect(keyId.toString('hex')).toBe(keyIdHex);
      const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: rawKey.toString('base64url') }, format: 'jwk' });

      // The note: text, blank line, "— <name> <base64(key ID || signature)>".
      const note = checkpointLine.note as string;
      const split = note.indexOf('\n\n');
      const text = note.slice(0, split + 1);
      const signatureLine = note.slice(split + 2).trimEnd();
      expect(signatureLine.startsWith(`\u2014 ${name} `)).toBe(true);
      const signed = Buffer.from(signatureLine.slice(`\u2014 ${name} `.length), 'base64');
      expect(signed.subarray(0, 4).equals(keyId)).toBe(true);
      expect(verify(null, Buffer.from(text), publicKey, signed.subarray(4))).toBe(true);
      const [origin, sizeText, rootBase64] = text.trimEnd().split('\n') as [string, string, string];
      expect(origin).toBe(name);
      const size = Number(sizeText);
      const root = Buffer.from(rootBase64, 'base64');
      expect(size).toBe(receipts.length);

      // RFC 8785 for these values (strings, integers, null, objects): sorted keys, JSON.stringify otherwise.
      const canonical = (value: unknown): string => {
        if (value === null || typeof value !== 'object') return JSON.stringify(value);
        if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
        const object = value as Record<string, unknown>;
        return `{${Object.keys(object)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonical(object[key])}`)
          .join(',')}}`;
      };
      const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
      const leafHashOf = (receipt: unknown) => sha256(Buffer.from([0x00]), Buffer.from(canonical(receipt)));
      const nodeHashOf = (left: Buffer, right: Buffer) => sha256(Buffer.from([0x01]), left, right);

      // The inclusion proof of one receipt, as `gateway receipts prove` gives it.
      const target = receipts[5]!;
      const proved = await cli(['receipts', 'prove', String(target.id), '--json']);
      expect(proved.exitCode, proved.stderr).toBe(0);
      const proof = JSON.parse(proved.stdout) as { inclusionPath: string[]; checkpoint: { treeSize: number } };
      expect(proof.checkpoint.treeSize).toBe(size);

      // RFC 9162 §2.1.3.2, step by step.
      let fn = target.index as number;
      let sn = size - 1;
      let r = leafHashOf(target);
      for (const encoded of proof.inclusionPath) {
        const p = Buffer.from(encoded, 'base64');
        expect(sn).not.toBe(0);
        if (fn % 2 === 1 || fn === sn) {
          r = nodeHashOf(p, r);
          while (fn % 2 === 0 && fn !== 0) {
            fn >>= 1;
            sn >>= 1;
          }
        } else {
          r = nodeHashOf(r, p);
        }
        fn >>= 1;
        sn >>= 1;
      }
      expect(sn).toBe(0);
      expect(r.equals(root)).toBe(true);

      // And the whole signed root from the exported receipts (RFC 9162 §2.1.1 MTH).
      const mth = (hashes: Buffer[]): Buffer => {
        if (hashes.length === 1) return hashes[0]!;
        let k = 1;
        while (k * 2 < hashes.length) k *= 2;
        return nodeHashOf(mth(hashes.slice(0, k)), mth(hashes.slice(k)));
      };
      expect(mth(receipts.slice(0, size).map(leafHashOf)).equals(root)).toBe(true);
    },
  );

  it('`gateway receipts verify` passes on the untouched database and on its export', async () => {
    const fromDatabase = await cli(['receipts', 'verify']);
    expect(fromDatabase.exitCode, fromDatabase.stdout + fromDatabase.stderr).toBe(0);
    expect(fromDatabase.stdout).toContain('receipt log OK');
    const exportPath = join(workspace.directory, 'receipts.jsonl');
    expect((await cli(['receipts', 'export', '--out', exportPath])).exitCode).toBe(0);
    const fromFile = await cli(['receipts', 'verify', '--file', exportPath]);
    expect(fromFile.exitCode, fromFile.stdout + fromFile.stderr).toBe(0);
  });

  it('an edited receipt in an export fails `receipts verify --file`, naming it', async () => {
    const exportPath = join(workspace.directory, 'receipts.jsonl');
    const lines = (await readFile(exportPath, 'utf8')).trim().split('\n');
    const position = lines.findIndex((line) => line.includes('"id":"receipt-2"'));
    lines[position] = lines[position]!.replace(/"outcome":"(allowed|denied)"/, '"outcome":"error"');
    const tamperedPath = join(workspace.directory, 'tampered.jsonl');
    await writeFile(tamperedPath, `${lines.join('\n')}\n`);
    const result = await cli(['receipts', 'verify', '--file', tamperedPath]);
    expect(result.exitCode).toBe(6);
    expect(result.stdout).toContain('first broken receipt receipt-2');
  });

  it('an edited receipt in the SQLite file fails `receipts verify`, naming it', async () => {
    const database = new Database(join(workspace.directory, '.gateway', 'gateway.db'));
    try {
      const changed = database
        .prepare(`UPDATE receipts SET body = replace(body, '"durationMs":', '"durationMs":1') WHERE leaf_index = 4`)
        .run();
      expect(changed.changes).toBe(1);
      const result = await cli(['receipts', 'verify']);
      expect(result.exitCode).toBe(6);
      expect(result.stdout).toContain('first broken receipt receipt-4');
    } finally {
      database.close();
    }
  });

  it('a receipt deleted from the SQLite file fails `receipts verify`, naming it', async () => {
    const database = new Database(join(workspace.directory, '.gateway', 'gateway.db'));
    try {
      database.prepare('DELETE FROM receipts WHERE leaf_index = 1').run();
      const result = await cli(['receipts', 'verify']);
      expect(result.exitCode).toBe(6);
      expect(result.stdout).toContain('first broken receipt receipt-1');
    } finally {
      database.close();
    }
  });
});
