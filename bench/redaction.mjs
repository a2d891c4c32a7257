// bench/redaction: what redacting an upstream's answer costs per call, in-process (no servers): an MCP
// source's result (execute/mcp-redaction.ts) without secrets configured, with secrets none of which it holds
// (the common case: one search per form over the JSON text the size check has made already), and with one
// it holds (walked and copied); an OpenAPI response body (the executor's credential forms and text
// redaction). Run after `pnpm build`: node bench/redaction.mjs (a few seconds).
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { NO_SECRETS, redactText, secretForms } = await import(pathToFileURL(join(root, 'packages/runtime/dist/index.js')).href);
const { redactMcpResult } = await import(pathToFileURL(join(root, 'packages/server/dist/execute/mcp-redaction.js')).href);

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const TOKEN = 'vault-token-0123456789abcdefghijklmnopqrstuvwxyz';
const secrets = secretForms([`Bearer ${TOKEN}`, TOKEN]);
const where = { sourceName: 'bench', toolName: 'bench' };

const items = Array.from({ length: 30 }, (_, index) => ({ id: index, name: `item ${index}`, note: 'x'.repeat(30) }));
const clean = { content: [{ type: 'text', text: JSON.stringify(items) }], structuredContent: { items } };
const leaking = { content: [{ type: 'text', text: `${JSON.stringify(items)} ${TOKEN}` }], structuredContent: { items, echo: TOKEN } };
const body = JSON.stringify({ items });

/** Median µs per call over ROUNDS rounds of CALLS calls. */
function measure(run) {
  for (let index = 0; index < CALLS / 10; index += 1) run();
  const rounds = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const started = process.hrtime.bigint();
    for (let index = 0; index < CALLS; index += 1) run();
    rounds.push(Number(process.hrtime.bigint() - started) / CALLS / 1_000);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(rounds.length / 2)];
}

const serialised = JSON.stringify(clean);
const leakingSerialised = JSON.stringify(leaking);
const rows = [
  ['JSON.stringify of the result (the size check, paid before this change too)', () => JSON.stringify(clean)],
  ['MCP result, source without secrets', () => redactMcpResult(clean, serialised, NO_SECRETS, where)],
  [`MCP result, ${secrets.forms.length} forms, none in it`, () => redactMcpResult(clean, serialised, secrets, where)],
  ['MCP result holding the token (walked, copied)', () => redactMcpResult(leaking, leakingSerialised, secrets, where)],
  ['OpenAPI body: credential forms + text redaction', () => redactText(body, secretForms([`Bearer ${TOKEN}`]))],
];
console.log(`result JSON: ${serialised.length} bytes; median of ${ROUNDS} rounds of ${CALLS} calls`);
console.log('| step | µs per call |\n| --- | ---: |');
for (const [label, run] of rows) console.log(`| ${label} | ${measure(run).toFixed(2)} |`);
