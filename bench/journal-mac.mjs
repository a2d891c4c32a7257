// bench/journal-mac: what authenticating a receipt journal line adds to a call's path before its answer. A tight
// loop over a typical receipt draft: the line as written before lines had MACs, the line with its MAC
// (receipts/journal.ts, what the gateway writes), and one keyed digest of the arguments (receipts/log.ts, two
// of which every call already makes), in interleaved rounds; prints µs per line and the MAC's share.
// Run after `pnpm build`: node bench/journal-mac.mjs (a few seconds).
import { createSecretKey, randomBytes } from 'node:crypto';
import { keyedDigest } from '../packages/core/dist/index.js';
import { journalKeyFrom, journalLine } from '../packages/server/dist/receipts/journal.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const LINES = Number(process.env.BENCH_LINES ?? 100_000);
const draft = {
  time: new Date().toISOString(),
  session: 'session-12345',
  person: 'alice@example.com',
  clientId: 'https://client.example.com/oauth-client.json',
  tool: 'get_order',
  source: 'orders',
  publication: 'publication-3',
  fingerprint: `sha256:${'a'.repeat(64)}`,
  login: 'orders/api_key',
  outcome: 'allowed',
  reason: null,
  upstreamStatus: 200,
  durationMs: 1.234,
  argumentsDigest: `hmac-sha256:${'b'.repeat(64)}`,
  resultDigest: `hmac-sha256:${'c'.repeat(64)}`,
};
const digestKeyBytes = randomBytes(32);
const journalKey = journalKeyFrom(digestKeyBytes);
const digestKey = createSecretKey(digestKeyBytes);
const unauthenticated = (seq) => `{"seq":${seq},"draft":${JSON.stringify(draft)}}\n`;
const authenticated = (seq) => journalLine(journalKey, 'main', seq, draft);
const digest = (seq) => keyedDigest(digestKey, { orderId: `ord_${seq}` });

/** µs per call of `make`, over LINES calls. */
function timed(make) {
  let bytes = 0;
  const start = process.hrtime.bigint();
  for (let seq = 1; seq <= LINES; seq += 1) bytes += make(seq).length;
  if (bytes === 0) throw new Error('nothing made');
  return Number(process.hrtime.bigint() - start) / LINES / 1000;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rows = { line: [], withMac: [], digest: [] };
for (let round = 0; round < ROUNDS; round += 1) {
  rows.line.push(timed(unauthenticated));
  rows.withMac.push(timed(authenticated));
  rows.digest.push(timed(digest));
}
const added = rows.withMac.map((value, index) => value - rows.line[index]);
console.log(`journal line: ${Buffer.byteLength(unauthenticated(1))} bytes without a MAC, ${Buffer.byteLength(authenticated(1))} with`);
console.log(`per line (median of ${ROUNDS} rounds of ${LINES}):`);
console.log(`  line without MAC   ${median(rows.line).toFixed(2)} µs`);
console.log(`  line with MAC      ${median(rows.withMac).toFixed(2)} µs`);
console.log(`  the MAC adds       ${median(added).toFixed(2)} µs (rounds: ${added.map((value) => value.toFixed(2)).join(', ')})`);
console.log(`  one keyed digest   ${median(rows.digest).toFixed(2)} µs (a call makes two)`);
console.log(`load average ${(await import('node:os')).loadavg()[0].toFixed(1)}`);
