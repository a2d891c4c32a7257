/**
 * Replicas under chaos (issue 34): three `gateway serve` processes on one PostgreSQL, clients of both MCP eras
 * sent round-robin across them, 10,000 tool calls while replicas are SIGKILLed at random and started again, and
 * PostgreSQL restarted once in the middle. What must hold afterwards:
 *
 * - no call was answered without its receipt: every answered call's arguments (unique per attempt) have exactly
 *   one receipt in the log (matched by the keyed digest of the arguments, with the vault's digest key);
 * - the log's leaf numbers are contiguous from 0, and `gateway receipts verify` passes;
 * - the webhook receiver got every receipt's event, sequences 1…n in order with none lost; an event may be
 *   repeated only as docs/webhooks.md allows (the one in flight when its dispatcher died: same id and body,
 *   the sequence never going back).
 *
 * Calls are raw JSON-RPC over HTTP (speed): a 2026-07-28 `tools/call` with its `_meta`, or a 2025-11-25 one
 * after an `initialize`. A call that fails (its replica killed under it, the database restarting) is tried again
 * on the next replica with new arguments, so each attempt is told apart in the log.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyedDigest } from '@gateway/core';
import { runGateway } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { openPostgres } from '../src/store/postgres/database.js';
import { startReplicaSet, type ReplicaSet } from './support/replica-processes.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const REPLICAS = 3;
const TOTAL_CALLS = 10_000;
const CONCURRENCY = 16;
/**
 * The disruptions, one at a time, in this order: a random replica SIGKILLed (and started again), or PostgreSQL
 * restarted (pg_ctl restart -m fast: every connection of every replica closed). Disruption k is due once call
 * k × DISRUPT_EVERY_CALLS is sent or DISRUPT_EVERY_MS × k have passed, whichever comes first, so a slow shared
 * machine gets them all within the driver's time bound too.
 */
const DISRUPTIONS = ['kill', 'kill', 'kill', 'postgres', 'kill', 'kill', 'kill', 'kill'] as const;
const DISRUPT_EVERY_CALLS = Math.floor(TOTAL_CALLS / (DISRUPTIONS.length + 1));
const DISRUPT_EVERY_MS = 40_000;
/** Attempts per call (each on the next replica), with a growing pause between them. */
const MAX_ATTEMPTS = 12;
const REQUEST_TIMEOUT_MS = 15_000;
/**
 * A bound on the driver: all 10,000 calls must be sent before it (asserted), about 3 minutes on a quiet 2-core
 * machine; a machine too loaded to send them fails the test rather than proving less than it says.
 */
const DRIVE_DEADLINE_MS = 420_000;

const postgres = postgresForThisFile();
let receiver: WebhookReceiver;
let set: ReplicaSet;
let databaseUrl: string;
let digestKey: KeyObject;

type Era = '2026-07-28' | '2025-11-25';

interface Answer {
  call: number;
  replica: number;
  era: Era;
  arguments: Record<string, unknown>;
  isError: boolean;
}

beforeAll(async () => {
  databaseUrl = await postgres.server.createDatabase();
  receiver = await startWebhookReceiver();
  set = await startReplicaSet({
    count: REPLICAS,
    databaseUrl,
    tools: ['create_order'],
    configExtra: [
      'receipts:\n  checkpoint: { everyReceipts: 1000, everySeconds: 5 }',
      `webhooks:\n  audit:\n    url: ${receiver.url}\n    secret: audit-webhook-secret`,
    ].join('\n'),
    secrets: { GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: newWebhookSecret() },
  });
  digestKey = createSecretKey(Buffer.from(set.env.GATEWAY_SECRET_RECEIPTS_DIGEST_KEY!, 'base64url'));
}, 180_000);

afterAll(async () => {
  await set?.close();
  await receiver?.close();
});

function requestOf(
  era: Era,
  id: number,
  method: string,
  params: Record<string, unknown>,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    authorization: `Bearer ${set.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': era,
  };
  if (era === '2025-11-25') return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) };
  headers['mcp-method'] = method;
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': era,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'chaos', version: '1.0.0' },
  };
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta } }) };
}

/** One JSON-RPC request; the parsed message (a JSON body, or the first `data:` of an SSE one), or why it failed. */
async function send(
  mcpUrl: string,
  request: { headers: Record<string, string>; body: string },
): Promise<{ message?: { result?: Record<string, unknown>; error?: unknown }; failure?: string }> {
  try {
    const response = await fetch(mcpUrl, { method: 'POST', ...request, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await response.text();
    if (response.status !== 200) return { failure: `HTTP ${response.status} ${text.slice(0, 200)}` };
    const json = text.startsWith('{')
      ? text
      : text
          .split('\n')
          .find((line) => line.startsWith('data: '))
          ?.slice(6);
    if (!json) return { failure: `no JSON-RPC message in ${text.slice(0, 200)}` };
    return { message: JSON.parse(json) as { result?: Record<string, unknown>; error?: unknown } };
  } catch (error) {
    return { failure: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

describe('three replicas on one PostgreSQL, under kills and a database restart', () => {
  it('answers every call with its receipt, keeps one contiguous verified log, and delivers every event in order', async () => {
    const started = Date.now();
    // A 2025-11-25 client begins with `initialize` (served statelessly: nothing of it is kept in a replica).
    for (const replica of set.replicas) {
      const { message, failure } = await send(
        replica.mcpUrl,
        requestOf('2025-11-25', 0, 'initialize', {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'chaos-legacy', version: '1.0.0' },
        }),
      );
      expect(failure).toBeUndefined();
      expect((message?.result as { protocolVersion?: string } | undefined)?.protocolVersion).toBe('2025-11-25');
    }

    const answers: Answer[] = [];
    const failures: string[] = [];
    const kills: Array<{ atCall: number; replica: number }> = [];
    let postgresRestarts = 0;
    // One disruption at a time: a kill waits for the replica killed before it to be back.
    let chaos: Promise<void> = Promise.resolve();
    const disrupt = (work: () => Promise<void>) => {
      chaos = chaos.then(work);
    };
    const deadline = Date.now() + DRIVE_DEADLINE_MS;
    let next = 0;

    const callOnce = async (call: number): Promise<void> => {
      const era: Era = Math.floor(call / REPLICAS) % 2 === 0 ? '2026-07-28' : '2025-11-25';
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
        const replica = (call + attempt) % REPLICAS;
        const args = { body: { customer: `chaos-${call}-${attempt}`, items: [{ sku: 'SKU-1', quantity: 1 }] } };
        const { message, failure } = await send(
          set.replicas[replica]!.mcpUrl,
          requestOf(era, call, 'tools/call', { name: 'create_order', arguments: args }),
        );
        if (message?.result) {
          answers.push({ call, replica, era, arguments: args, isError: message.result.isError === true });
          return;
        }
        failures.push(`call ${call} attempt ${attempt} on replica ${replica} (${era}): ${failure ?? JSON.stringify(message?.error)}`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
      }
    };

    let disrupted = 0;
    const disruptWhenDue = (call: number) => {
      const due = disrupted + 1;
      if (due > DISRUPTIONS.length || (call < due * DISRUPT_EVERY_CALLS && Date.now() - started < due * DISRUPT_EVERY_MS)) return;
      disrupted = due;
      const kind = DISRUPTIONS[due - 1]!;
      disrupt(async () => {
        if (kind === 'postgres') {
          await postgres.server.restart();
          postgresRestarts += 1;
          return;
        }
        const victim = Math.floor(Math.random() * REPLICAS);
        kills.push({ atCall: call, replica: victim });
        await set.kill(victim);
        await set.start(victim);
      });
    };

    const driver = async () => {
      while (next < TOTAL_CALLS && Date.now() < deadline) {
        const call = next;
        next += 1;
        disruptWhenDue(call);
        await callOnce(call);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, driver));
    await chaos;
    const driven = Date.now();

    const crashed = [...new Set(set.unexpectedExits.map((exit) => exit.index))];
    const crashLogs = (await Promise.all(crashed.map((index) => set.logTail(index, 30)))).join('\n');
    expect(set.unexpectedExits, `no replica exited on its own:\n${crashLogs}`).toEqual([]);
    expect(kills.length).toBe(DISRUPTIONS.filter((kind) => kind === 'kill').length);
    expect(postgresRestarts).toBe(1);
    // All 10,000 calls were sent within the bound, and every one was answered within its attempts.
    expect(next, `calls sent in ${DRIVE_DEADLINE_MS / 1000} s`).toBe(TOTAL_CALLS);
    expect(new Set(answers.map((answer) => answer.call)).size, failures.slice(-5).join('\n')).toBe(TOTAL_CALLS);

    // The log: leaves 0…n-1 without a gap, the tree's head at n, one receipt per answered attempt.
    const pool = openPostgres(databaseUrl, { max: 1 });
    let receipts: Array<{ index: number; outcome: string; argumentsDigest: string }>;
    try {
      const { rows } = await pool.query<{ leaf_index: string; body: string }>('SELECT leaf_index, body FROM receipts ORDER BY leaf_index');
      receipts = rows.map((row) => {
        const body = JSON.parse(row.body) as { index: number; outcome: string; argumentsDigest: string };
        expect(body.index).toBe(Number(row.leaf_index));
        return body;
      });
      const { rows: tree } = await pool.query<{ size: string }>('SELECT size FROM receipt_tree');
      expect(Number(tree[0]!.size)).toBe(receipts.length);
    } finally {
      await pool.end();
    }
    expect(receipts.map((receipt) => receipt.index)).toEqual(receipts.map((_receipt, index) => index));
    const byDigest = new Map<string, Array<{ index: number; outcome: string }>>();
    for (const receipt of receipts) byDigest.set(receipt.argumentsDigest, [...(byDigest.get(receipt.argumentsDigest) ?? []), receipt]);
    const unreceipted = answers.filter((answer) => byDigest.get(keyedDigest(digestKey, answer.arguments))?.length !== 1);
    expect(unreceipted.slice(0, 5), 'answered calls without exactly one receipt').toEqual([]);
    for (const answer of answers) {
      const [receipt] = byDigest.get(keyedDigest(digestKey, answer.arguments))!;
      expect(receipt!.outcome).toBe(answer.isError ? 'error' : 'allowed');
    }
    // No attempt ran twice; receipts beyond the answers are attempts whose answer the kill or the restart cut.
    expect(byDigest.size).toBe(receipts.length);
    expect(receipts.length - answers.length).toBeLessThanOrEqual(failures.length);

    const verified = await runGateway(['receipts', 'verify'], { cwd: set.workspace.directory, env: set.env, timeout: 120_000 });
    expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toContain('receipt log OK');

    // Every receipt's event at the receiver: sequence k is receipt k-1, 1…n in order; a repeat is the event in
    // flight when its dispatcher died (or could not record its acknowledgement), same id and body, never going back.
    const delivered = () => receiver.requests.filter((request) => request.status === 204);
    const highest = () => delivered().reduce((top, request) => Math.max(top, Number(JSON.parse(request.body).sequence)), 0);
    await waitFor(() => highest() >= receipts.length, `${receipts.length} events at the receiver`, 90_000);
    const events = delivered().map((request) => ({
      ...(JSON.parse(request.body) as { id: string; sequence: string; data: { receipt: string } }),
      raw: request.body,
    }));
    const sequences = events.map((event) => Number(event.sequence));
    for (let position = 1; position < sequences.length; position += 1) {
      expect(sequences[position], `event ${position} goes back`).toBeGreaterThanOrEqual(sequences[position - 1]!);
    }
    const firstOf = new Map<number, (typeof events)[number]>();
    for (const event of events) {
      const earlier = firstOf.get(Number(event.sequence));
      if (earlier) expect(event.raw).toBe(earlier.raw);
      else firstOf.set(Number(event.sequence), event);
    }
    expect([...firstOf.keys()]).toEqual(receipts.map((_receipt, index) => index + 1));
    expect([...firstOf.values()].map((event) => event.data.receipt)).toEqual(receipts.map((receipt) => `receipt-${receipt.index}`));
    const repeats = events.length - firstOf.size;
    // At most the one event in flight per interruption of a dispatcher (a kill, the database restart).
    expect(repeats).toBeLessThanOrEqual(kills.length + postgresRestarts);

    const seconds = (ms: number) => (ms / 1000).toFixed(1);
    const legacyCalls = answers.filter((answer) => answer.era === '2025-11-25').length;
    console.log(
      `replicas chaos: ${next} of ${TOTAL_CALLS} calls (${legacyCalls} on 2025-11-25) in ` +
        `${seconds(driven - started)} s, ${failures.length} failed attempts retried ` +
        `(${failures.filter((failure) => failure.includes('RECEIPT_WRITE_FAILED')).length} answered RECEIPT_WRITE_FAILED), ` +
        `${kills.length} kills, ` +
        `${postgresRestarts} PostgreSQL restart, ${receipts.length} receipts (${receipts.length - answers.length} of cut answers), ` +
        `${events.length} deliveries (${repeats} repeats), all checked ${seconds(Date.now() - started)} s after the first call`,
    );
  }, 600_000);

  it("delivery is taken over within the lease's 15 s when the dispatcher's replica is SIGKILLed", async () => {
    const holderOf = async (): Promise<string | null> => {
      const pool = openPostgres(databaseUrl, { max: 1 });
      try {
        const { rows } = await pool.query<{ lease_holder: string | null }>(
          "SELECT lease_holder FROM webhook_endpoints WHERE name = 'audit'",
        );
        return rows[0]?.lease_holder ?? null;
      } finally {
        await pool.end();
      }
    };
    const delivered = () => receiver.requests.filter((request) => request.status === 204).length;
    const call = async (mcpUrl: string, customer: string) => {
      const args = { body: { customer, items: [{ sku: 'SKU-1', quantity: 1 }] } };
      const { message, failure } = await send(mcpUrl, requestOf('2026-07-28', 1, 'tools/call', { name: 'create_order', arguments: args }));
      expect(failure).toBeUndefined();
      expect(message?.result?.isError).not.toBe(true);
    };
    // A call delivered first: whoever delivered it holds the lease now (a live replica, not one killed earlier).
    const warmedUp = delivered();
    await call(set.replicas[0]!.mcpUrl, 'before-the-dispatcher-dies');
    await waitFor(() => delivered() > warmedUp, 'the event of a call made before the kill', 30_000);
    // The holder names its process (host/pid/random): the replica whose pid it carries delivers now.
    const holder = await holderOf();
    const dispatcher = set.replicas.find(
      (replica) => replica.child?.pid !== undefined && holder?.split('/')[1] === String(replica.child.pid),
    );
    expect(dispatcher, `the lease holder ${holder} is one of the replicas`).toBeDefined();
    const other = set.replicas.find((replica) => replica !== dispatcher)!;
    const before = delivered();
    const killedAt = Date.now();
    await set.kill(dispatcher!.index);
    await call(other.mcpUrl, 'after-the-dispatcher-died');
    await waitFor(() => delivered() > before, 'the event of a call made after the kill', 30_000);
    const takeoverMs = Date.now() - killedAt;
    console.log(`replicas chaos: delivery taken over ${(takeoverMs / 1000).toFixed(1)} s after the dispatcher's replica was killed`);
    expect(takeoverMs).toBeLessThan(15_000 + 5_000);
    expect(await holderOf()).not.toBe(holder);
    await set.start(dispatcher!.index);
  }, 60_000);
});
