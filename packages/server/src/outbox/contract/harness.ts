import type { Transaction, UnitOfWork } from '../../store/unit-of-work.js';
import type { OutboxEvent, OutboxStore } from '../ports.js';

/**
 * What the outbox contract runs against: a fresh, empty store of one adapter (one backing database per call),
 * the unit of work of the same database (appends run in its transactions), and how to dispose of them. A
 * PostgreSQL adapter passes a factory of its own; the suites do not change.
 */
export interface OutboxStoreUnderTest {
  store: OutboxStore;
  unitOfWork: UnitOfWork;
  close(): Promise<void>;
}

export type OutboxStoreFactory = () => Promise<OutboxStoreUnderTest>;

/** The event `build` makes for a receipt: its id and body name the receipt and the sequence it was given. */
export function receiptEvent(endpoint: string, receipt: string) {
  return (sequence: number) => ({
    eventId: `evt_${receipt}_${endpoint}`,
    receiptId: receipt,
    body: JSON.stringify({ receipt, sequence }),
  });
}

/** Appends one event per receipt to `endpoint`, each receipt in a unit of work of its own. */
export async function appendReceipts(
  underTest: OutboxStoreUnderTest,
  endpoint: string,
  receipts: readonly string[],
): Promise<OutboxEvent[]> {
  const events: OutboxEvent[] = [];
  for (const receipt of receipts) {
    events.push(await underTest.unitOfWork.run((tx: Transaction) => underTest.store.append(tx, endpoint, receiptEvent(endpoint, receipt))));
  }
  return events;
}

/** `[sequence, receipt]` of the endpoint's events, lowest sequence first. */
export async function stream(store: OutboxStore, endpoint: string): Promise<Array<[number, string | null]>> {
  return (await store.events(endpoint, { limit: 1000 })).map((event) => [event.sequence, event.receiptId]);
}

export const HOLDER_A = 'process-a';
export const HOLDER_B = 'process-b';
export const LEASE_MS = 10_000;
