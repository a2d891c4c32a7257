/**
 * MCP sources that echo their credentials: a stdio server echoing the secret of its `env`, and a Streamable
 * HTTP server on loopback echoing the vault bearer token it receives (test/support/leaking-mcp-server.mjs),
 * each in plain, base64, base64url, hex and percent-encoded form, in every place a result, an error or a
 * progress message can carry them. Imported and published by the real CLI, served on /mcp to SDK clients of
 * both eras; no client sees any of these forms, and neither does the log, the receipts or any file.
 *
 * Which path of /mcp answers: a 2026-07-28 call without a progress token takes the fast path
 * (mcp/fast-path.ts); a call with one, and every 2025-11-25 call of an MCP source's tool, takes the SDK path
 * (mcp/plugin.ts). Redaction happens before either (execute/mcp-redaction.ts), and each is exercised here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { REDACTED_LOG_PATHS } from '../src/logger.js';
import { allowAll } from './support/harness.js';
import { freePort } from './support/net.js';

const SERVER = join(import.meta.dirname, 'support', 'leaking-mcp-server.mjs');
// Reserved and non-ASCII characters, so each encoding differs from the plain value and from the others.
const ENV_SECRET = 'env-Secret/é+key~(42)=';
const BEARER_TOKEN = 'vault-Token/with+plus=and~tilde';
const ADMIN_TOKEN = 'mcp-redaction-admin-token';

/** The five encodings the servers echo, computed here independently of the gateway. */
function encodings(value: string): Record<string, string> {
  const bytes = Buffer.from(value, 'utf8');
  return {
    plain: value,
    base64: bytes.toString('base64'),
    base64url: bytes.toString('base64url'),
    hex: bytes.toString('hex'),
    percent: encodeURIComponent(value),
  };
}

/** Every form of every credential the two sources hold: none may reach a client, a log line or a file. */
const FORBIDDEN = [ENV_SECRET, BEARER_TOKEN, `Bearer ${BEARER_TOKEN}`].flatMap((value) =>
  Object.entries(encodings(value)).map(([form, text]) => ({ form: `${form} of ${value.slice(0, 12)}…`, text })),
);

function expectNoCredential(text: string, where: string): void {
  for (const { form, text: value } of FORBIDDEN) expect(text, `${form} reached ${where}`).not.toContain(value);
}

let directory: { path: string; cleanup(): Promise<void> };
let httpServer: ChildProcess;
let gateway: RunningGateway | undefined;
const logs: string[] = [];
const env = {
  GATEWAY_SECRET_ENV_SECRET: ENV_SECRET,
  GATEWAY_SECRET_BEARER_TOKEN: BEARER_TOKEN,
  GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN,
};

async function startLeakingHttpServer(): Promise<string> {
  httpServer = spawn(process.execPath, [SERVER, 'http'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the leaking HTTP server did not start')), 20_000);
    httpServer.stdout!.on('data', (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString());
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
  });
  return `http://127.0.0.1:${port}/mcp`;
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-mcp-redaction-');
  const url = await startLeakingHttpServer();
  const port = await freePort();
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  local:',
      '    kind: mcp',
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(SERVER)}, stdio]`,
      '    env: { LEAKED_SECRET: { secret: env-secret } }',
      '  remote:',
      '    kind: mcp',
      `    url: ${url}`,
      '    credentials: { type: bearer, secret: bearer-token }',
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      'drift:',
      '  enabled: false',
      '',
    ].join('\n'),
  );
  const cli = async (...args: string[]) => {
    const result = await runGateway(args, { cwd: directory.path, env });
    expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    expectNoCredential(String(result.stdout) + String(result.stderr), `gateway ${args[0]}`);
  };
  await cli('keys', 'generate', '--out', 'keys');
  for (const [source, tool] of [
    ['local', 'leak'],
    ['remote', 'remote__leak'],
  ] as const) {
    await cli('import', source);
    await cli('review', source, '--select', tool);
    await cli('publish', source, '--key', 'keys/publisher.private.jwk', '--publisher', 'tester@example.com');
  }
  gateway = await startGateway({
    configPath: join(directory.path, 'gateway.yaml'),
    lockPath: join(directory.path, 'tools.lock'),
    env,
    logger: pino(
      { level: 'trace', redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
      { write: (line: string) => void logs.push(line) },
    ),
    shutdownGraceMs: 1_000,
    authorizerOverride: allowAll(new Set()),
  });
}, 180_000);

afterAll(async () => {
  await gateway?.close();
  httpServer?.kill();
  await directory?.cleanup();
});

type Result = { content: Array<Record<string, unknown>>; structuredContent?: unknown; isError?: boolean };
type Progress = { progress: number; total?: number; message?: string };
type Call = (name: string, args: Record<string, unknown>, onprogress?: (progress: Progress) => void) => Promise<Result>;

type Connected = { call: Call; list(): Promise<Array<{ name: string; description?: string }>>; close(): Promise<void> };

async function modernClient(): Promise<Connected> {
  const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway!.mcpUrl)));
  return {
    call: (name, args, onprogress) => client.callTool({ name, arguments: args }, onprogress ? { onprogress } : {}) as Promise<Result>,
    list: async () => (await client.listTools()).tools,
    close: () => client.close(),
  };
}

async function legacyClient(): Promise<Connected> {
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(gateway!.mcpUrl)));
  return {
    call: (name, args, onprogress) =>
      client.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress } : {}) as Promise<Result>,
    list: async () => (await client.listTools()).tools,
    close: () => client.close(),
  };
}

const CLIENTS = [
  ['a 2026-07-28 client (SDK v2; the fast path)', modernClient],
  ['a 2025-11-25 client (SDK v1; the SDK path)', legacyClient],
] as const;
const SOURCES = [
  ['a stdio server echoing its env secret', 'leak'],
  ['a Streamable HTTP server echoing the vault bearer token', 'remote__leak'],
] as const;

describe.each(CLIENTS)('%s', (_client, connect) => {
  it('the tool descriptions that quoted the credentials are listed redacted (tools.lock holds them so)', async () => {
    const client = await connect();
    try {
      const tools = await client.list();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['leak', 'remote__leak']);
      for (const tool of tools)
        expect(tool.description).toBe('Echoes the credential it was given ([redacted], [redacted], [redacted], [redacted], [redacted]).');
      expectNoCredential(JSON.stringify(tools), 'tools/list');
    } finally {
      await client.close();
    }
  }, 30_000);

  describe.each(SOURCES)('calling %s', (_source, tool) => {
    it.each(['text', 'structured', 'resource', 'link', 'is-error'])(
      'no encoding of the credential reaches the client in %s',
      async (where) => {
        const client = await connect();
        try {
          const result = await client.call(tool, { where });
          const text = JSON.stringify(result);
          expectNoCredential(text, `the ${where} result`);
          // The upstream did echo: each echoed value was replaced where it stood.
          expect(text).toContain('[redacted]');
          if (where === 'is-error') expect(result.isError).toBe(true);
          if (where === 'structured') {
            const structured = result.structuredContent as { echoes: Array<Record<string, string>>; nested: { list: string[] } };
            for (const echo of structured.echoes) {
              expect(echo).toEqual({
                plain: '[redacted]',
                base64: '[redacted]',
                base64url: '[redacted]',
                hex: '[redacted]',
                percent: '[redacted]',
              });
            }
            expect(structured).toHaveProperty(['[redacted]'], 'a key');
            expect(new Set(structured.nested.list)).toEqual(new Set(['[redacted]']));
          }
          if (where === 'resource') {
            const block = result.content[0] as { type: string; resource: { uri: string; text: string } };
            expect(block.type).toBe('resource');
            expect(block.resource.uri).toBe('secret://echo/[redacted]');
            expect(new Set(block.resource.text.split('\n'))).toEqual(new Set(['[redacted]']));
          }
          if (where === 'link') {
            expect(result.content[0]).toMatchObject({
              type: 'resource_link',
              uri: 'https://echo.example/[redacted]?hex=[redacted]',
              name: '[redacted]',
              title: '[redacted]',
            });
          }
        } finally {
          await client.close();
        }
      },
      30_000,
    );

    it("the upstream's error message reaches the client redacted", async () => {
      const client = await connect();
      try {
        const result = await client.call(tool, { where: 'error' });
        const text = JSON.stringify(result);
        expect(result.isError).toBe(true);
        expect(text).toContain('MCP_UPSTREAM_FAILED');
        expect(text).toContain('upstream failure: [redacted]');
        expectNoCredential(text, 'the error message');
      } finally {
        await client.close();
      }
    }, 30_000);

    it("the upstream's progress messages reach the client redacted (the SDK path streams them)", async () => {
      const client = await connect();
      const seen: Progress[] = [];
      try {
        const result = await client.call(tool, { where: 'progress' }, (progress) => seen.push(progress));
        expect(result.content).toEqual([{ type: 'text', text: 'done' }]);
      } finally {
        await client.close();
      }
      // The SDK client settles a result before a progress notification sent just before it (mcp-sources.md).
      expect(seen.length).toBeGreaterThanOrEqual(3);
      for (const progress of seen) expect(progress.message).toBe('step [redacted]');
      expectNoCredential(JSON.stringify(seen), 'a progress message');
    }, 30_000);

    it.each(['blob', 'image'])(
      'a %s whose bytes carry the credential is refused whole (bytes cannot be redacted)',
      async (where) => {
        const client = await connect();
        try {
          const result = await client.call(tool, { where });
          const text = JSON.stringify(result);
          expect(result.isError).toBe(true);
          expect(text).toContain('MCP_RESULT_CARRIES_CREDENTIAL');
          expect(result.content.some((block) => block.type !== 'text')).toBe(false);
          expectNoCredential(text, `the ${where} refusal`);
        } finally {
          await client.close();
        }
      },
      30_000,
    );

    it('binary content without a credential passes unchanged', async () => {
      const client = await connect();
      try {
        const result = await client.call(tool, { where: 'clean-blob' });
        expect(result.isError).toBeFalsy();
        expect(result.content).toEqual([
          { type: 'resource', resource: { uri: 'file:///clean.bin', mimeType: 'application/octet-stream', blob: 'AAEC/w==' } },
          { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' },
        ]);
      } finally {
        await client.close();
      }
    }, 30_000);
  });
});

describe('after the calls', () => {
  it('the receipts name the refusal; no log line, receipt or file holds a credential', async () => {
    const receipts = await runGateway(['receipts', 'list', '--tool', 'leak', '--outcome', 'error', '--json'], { cwd: directory.path, env });
    expect(receipts.exitCode, String(receipts.stderr)).toBe(0);
    expect(String(receipts.stdout)).toContain('UPSTREAM_RESPONSE_CARRIES_CREDENTIAL');
    expectNoCredential(String(receipts.stdout), 'a receipt');

    // The stdio server's stderr was logged, its credential redacted.
    const stderr = logs.filter((line) => line.includes('mcp upstream stderr'));
    expect(stderr.join('\n')).toContain('starting with [redacted] ([redacted])');
    expectNoCredential(logs.join('\n'), 'the log');

    await gateway!.close();
    gateway = undefined;
    const entries = await readdir(directory.path, { withFileTypes: true, recursive: true });
    const files = entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
    expect(files.some((file) => file.endsWith('gateway.db'))).toBe(true);
    for (const file of files) expectNoCredential((await readFile(file)).toString('latin1') + (await readFile(file, 'utf8')), file);
  }, 60_000);
});
