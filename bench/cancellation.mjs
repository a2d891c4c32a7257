// bench/cancellation: what making a call's cancel signal costs, an AbortController's against the gateway's
// Cancellation (packages/runtime/src/network/cancellation.ts), as the /mcp fast path uses one per call: made, an
// abort listener added and removed (what the upstream exchange does), never aborted. Interleaved rounds in one run.
//
//   pnpm build && node bench/cancellation.mjs [--rounds 5] [--count 200000]
import { parseArgs } from 'node:util';
import { Cancellation } from '../packages/runtime/dist/index.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, count: { type: 'string', default: '200000' } } });
const ROUNDS = Number(values.rounds);
const COUNT = Number(values.count);
const listener = () => undefined;
let aborted = 0;

const kinds = {
  AbortController: () => {
    const controller = new AbortController();
    const signal = controller.signal;
    signal.addEventListener('abort', listener, { once: true });
    if (signal.aborted) aborted += 1;
    signal.removeEventListener('abort', listener);
  },
  Cancellation: () => {
    const cancellation = new Cancellation();
    cancellation.addEventListener('abort', listener, { once: true });
    if (cancellation.aborted) aborted += 1;
    cancellation.removeEventListener('abort', listener);
  },
};

const totals = Object.fromEntries(Object.keys(kinds).map((name) => [name, 0]));
for (let round = 0; round < ROUNDS + 1; round += 1) {
  for (const [name, make] of Object.entries(kinds)) {
    const started = process.hrtime.bigint();
    for (let index = 0; index < COUNT; index += 1) make();
    const nanoseconds = Number(process.hrtime.bigint() - started);
    // The first round warms both up (the JIT), and is not counted.
    if (round > 0) totals[name] += nanoseconds;
  }
}
console.log(`Node ${process.version}, ${ROUNDS} rounds of ${COUNT} (after one warm-up round)`);
for (const [name, nanoseconds] of Object.entries(totals))
  console.log(`  ${name}: ${(nanoseconds / ROUNDS / COUNT / 1000).toFixed(2)} µs each`);
console.log(`  Cancellation/AbortController: ${(totals.Cancellation / totals.AbortController).toFixed(3)}`);
if (aborted !== 0) throw new Error('a signal was aborted');
