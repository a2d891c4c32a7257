/**
 * Integer bounds beyond 2^53, served: the gateway imports a document whose bounds a double cannot hold, and
 * `tools/list` carries their exact digits on the wire (checked in the raw HTTP body, since any JSON parser in
 * the test would round them); arguments are validated against the doubles every JSON client reads.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRequest } from './support/fixtures.js';
import { startHarness, type Harness } from './support/harness.js';

const LEDGER_PATH =
  `
  /ledger:
    get:
      operationId: listLedger
      summary: Ledger entries between two ids
      parameters:
        - { name: after, in: query, required: true, schema: { type: integer, format: int64, minimum: -9223372036854775808, ` +
  `maximum: 18014398509481983 } }
      responses:
        '200': { description: Entries. }
`;

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({ editDocument: (document) => document.replace(/^paths:\n/m, `paths:${LEDGER_PATH}`) });
}, 120_000);

afterAll(async () => {
  await harness?.stop();
});

/** One JSON-RPC request over raw HTTP; the response body as text (SSE framing removed). */
async function rpcText(
  era: '2026-07-28' | '2025-11-25',
  method: string,
  params: Record<string, unknown>,
  rawArguments?: string,
): Promise<string> {
  const url = new URL(harness.mcpUrl);
  const built = mcpRequest(era, method, params);
  const headers = built.headers;
  let body = built.body;
  // Arguments written as text, so an integer literal reaches the gateway with the digits the test chose.
  if (rawArguments !== undefined) body = body.replace('"arguments":"RAW"', `"arguments":${rawArguments}`);
  const text = await new Promise<string>((resolve, reject) => {
    const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers }, (response) => {
      let received = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (received += chunk));
      response.on('end', () => resolve(received));
    });
    request.on('error', reject);
    request.end(body);
  });
  return text.replace(/^[\s\S]*?data: /, '');
}

/** The listed `list_ledger` tool's JSON text, cut from the raw body. */
function ledgerToolText(body: string): string {
  const start = body.indexOf('{"name":"list_ledger"');
  expect(start, body.slice(0, 300)).toBeGreaterThanOrEqual(0);
  return body.slice(start, body.indexOf('"annotations"', start));
}

describe('integer bounds beyond 2^53 on the wire', () => {
  it('tools/list (2026-07-28) carries the exact digits of the document in inputSchema', async () => {
    const tool = ledgerToolText(await rpcText('2026-07-28', 'tools/list', {}));
    expect(tool).toContain('"minimum":-9223372036854775808');
    expect(tool).toContain('"maximum":18014398509481983');
    expect(tool).not.toContain('18014398509481984');
    expect(tool).not.toContain('9223372036854776000');
  });

  it('tools/list (2025-11-25) answered by the one tools/list of both eras carries the exact digits too', async () => {
    const tool = ledgerToolText(await rpcText('2025-11-25', 'tools/list', {}));
    expect(tool).toContain('"minimum":-9223372036854775808');
    expect(tool).toContain('"maximum":18014398509481983');
  });

  it('a request only the MCP SDK answers (here: with _meta) lists the doubles of those bounds', async () => {
    // The SDK serialises with JSON.stringify, which has no exact form for them (docs/lockfile.md › Large integers).
    const tool = ledgerToolText(await rpcText('2025-11-25', 'tools/list', { _meta: { progressToken: 'p' } }));
    expect(tool).toContain(`"maximum":${String(Number('18014398509481983'))}`);
    expect(tool).toContain(`"minimum":${String(Number('-9223372036854775808'))}`);
  });

  it('arguments are validated against the bounds as doubles: within is called, beyond is an argument error', async () => {
    const before = harness.api.requests.length;
    const within = await rpcText('2026-07-28', 'tools/call', { name: 'list_ledger', arguments: 'RAW' }, '{"after":18014398509481983}');
    expect(within).not.toContain('invalid arguments');
    expect(harness.api.requests.length).toBe(before + 1);
    expect(harness.api.requests.at(-1)!.path).toBe('/ledger');
    // 18014398509481990 reads as 18014398509481992, above the bound's double 18014398509481984.
    const beyond = await rpcText('2026-07-28', 'tools/call', { name: 'list_ledger', arguments: 'RAW' }, '{"after":18014398509481990}');
    expect(beyond).toContain('invalid arguments for list_ledger');
    expect(harness.api.requests.length).toBe(before + 1);
  });
});
