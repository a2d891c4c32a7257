import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/sqlite/database.js';
import { outboxMigrations, SqliteOutboxStore } from '../src/outbox/sqlite/index.js';
import { newWebhookSecret, startWebhookReceiver } from './support/webhook-receiver.js';

const child = fileURLToPath(new URL('./support/outbox-child.mjs', import.meta.url));
const TOTAL = 1000;
// Where each run is killed (ms after it starts): the first while receipts are still being written, the
// later ones after the dead process's lease (500 ms) has expired, while delivery is under way.
const KILL_AFTER_MS = [300, 900, 1100, 800, 1300];

describe('webhook outbox crash safety', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('SIGKILL mid-way, five times: every event is delivered, in sequence order, repeats only under the same id, none lost', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-crash-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const databasePath = join(directory, 'gateway.db');
    const secret = newWebhookSecret();
    const receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 1 })); // a slow receiver
    cleanups.push(() => receiver.close());

    const run = (killAfterMs: number | undefined) =>
      new Promise<{ isDone: boolean }>((resolve, reject) => {
        const process = spawn(globalThis.process.execPath, [child, databasePath, receiver.url, String(TOTAL), secret], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        let errors = '';
        process.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        process.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
        const timer = killAfterMs === undefined ? undefined : setTimeout(() => process.kill('SIGKILL'), killAfterMs);
        process.on('exit', (code, signal) => {
          clearTimeout(timer);
          if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`child exited ${code}: ${errors}`));
          else resolve({ isDone: output.includes('done') });
        });
      });

    let killedMidWay = 0;
    for (const killAfterMs of KILL_AFTER_MS) if (!(await run(killAfterMs)).isDone) killedMidWay += 1;
    expect(killedMidWay).toBeGreaterThanOrEqual(3);
    expect((await run(undefined)).isDone).toBe(true);

    const database = openDatabase(databasePath, outboxMigrations);
    cleanups.push(() => database.close());
    expect(database.prepare('SELECT COUNT(*) AS count FROM crash_receipts').get()).toEqual({ count: TOTAL });
    expect((await new SqliteOutboxStore(database).endpoint('audit'))!.counts).toEqual({ pending: 0, delivered: TOTAL, failed: 0 });

    const acknowledged = receiver.requests.filter((request) => request.status === 200);
    const sequences = acknowledged.map((request) => Number((JSON.parse(request.body) as { sequence: string }).sequence));
    // In order across every crash: never a step back, and every sequence from 1 to 1,000.
    expect(sequences.every((sequence, index) => index === 0 || sequence >= sequences[index - 1]!)).toBe(true);
    expect([...new Set(sequences)]).toEqual(Array.from({ length: TOTAL }, (_, index) => index + 1));
    // Receipt n is sequence n+1 (one endpoint); a repeat carries the same id and the same body.
    const firstBodyBySequence = new Map<number, string>();
    for (const [index, request] of acknowledged.entries()) {
      const sequence = sequences[index]!;
      expect(request.headers['webhook-id']).toBe(`evt_receipt-${sequence - 1}_audit`);
      expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
      const first = firstBodyBySequence.get(sequence);
      if (first === undefined) firstBodyBySequence.set(sequence, request.body);
      else expect(request.body).toBe(first);
    }
    // A repeat only for an event in flight at a kill.
    expect(acknowledged.length - TOTAL).toBeLessThanOrEqual(KILL_AFTER_MS.length);
  });
});
