/**
 * An external-style MCP endpoint: the project's fixture server over HTTPS on loopback, with a certificate from
 * a test CA made at test time (openssl), requiring a bearer token the gateway takes from its vault.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll } from './support/harness.js';
import { startFixtureMcpServer, type FixtureMcpServer } from './support/mcp-fixture-server.js';
import { freePort } from './support/net.js';

const UPSTREAM_TOKEN = 'https-upstream-token-from-vault';
let directory: { path: string; cleanup(): Promise<void> };
let fixture: FixtureMcpServer;
let caPath: string;
let gateway: RunningGateway | undefined;
const CLIENT_TOKEN = 'https-client-token-must-not-reach-upstream';

function openssl(cwd: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-mcp-https-');
  const cwd = directory.path;
  openssl(
    cwd,
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '1',
    '-subj',
    '/CN=gateway test CA',
  );
  openssl(
    cwd,
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=127.0.0.1',
  );
  await writeFile(join(cwd, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    cwd,
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  );
  caPath = join(cwd, 'ca.pem');
  fixture = await startFixtureMcpServer({
    token: UPSTREAM_TOKEN,
    tls: { key: await readFile(join(cwd, 'server.key'), 'utf8'), cert: await readFile(join(cwd, 'server.pem'), 'utf8') },
  });
  await writeFile(
    join(cwd, 'gateway.yaml'),
    [
      'gateway:',
      '  url: https://gateway.example.com',
      'sources:',
      '  tracker:',
      '    kind: mcp',
      `    url: ${fixture.url}`,
      '    credentials: { type: bearer, secret: tracker-token }',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await fixture?.close();
  await directory?.cleanup();
});

describe('an HTTPS MCP endpoint with a test CA and a vault bearer token', () => {
  it('is imported over https with the vault token; the upstream sees only that credential', async () => {
    expect(fixture.url.startsWith('https://127.0.0.1:')).toBe(true);
    const result = await runGateway(['import', 'tracker', '--json'], {
      cwd: directory.path,
      env: { NODE_EXTRA_CA_CERTS: caPath, GATEWAY_SECRET_TRACKER_TOKEN: UPSTREAM_TOKEN },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ operations: 2, supported: 2 });
    expect(fixture.requests.length).toBeGreaterThan(0);
    for (const headers of fixture.requests) expect(headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    expect(result.stdout + result.stderr).not.toContain(UPSTREAM_TOKEN);
    expect(await readFile(join(directory.path, 'tools.lock'), 'utf8')).not.toContain(UPSTREAM_TOKEN);
  }, 60_000);

  it('a certificate from an untrusted CA is refused: the import fails and the lock is untouched', async () => {
    const before = await readFile(join(directory.path, 'tools.lock'), 'utf8');
    const result = await runGateway(['import', 'tracker'], { cwd: directory.path, env: { GATEWAY_SECRET_TRACKER_TOKEN: UPSTREAM_TOKEN } });
    expect(result.exitCode).toBe(8);
    expect(result.stderr).toContain('MCP_UPSTREAM_UNAVAILABLE');
    expect(await readFile(join(directory.path, 'tools.lock'), 'utf8')).toBe(before);
  }, 60_000);

  it('a missing vault secret names it (MCP_SECRET_MISSING) and nothing is sent', async () => {
    const sent = fixture.requests.length;
    const result = await runGateway(['import', 'tracker'], { cwd: directory.path, env: { NODE_EXTRA_CA_CERTS: caPath } });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('MCP_SECRET_MISSING');
    expect(result.stderr).toContain('tracker-token');
    expect(fixture.requests.length).toBe(sent);
  }, 60_000);
});

describe('serving an HTTPS MCP endpoint whose CA is trusted through caCertificates', () => {
  it('a call through /mcp succeeds with the vault bearer; the upstream never sees the client token', async () => {
    const cwd = directory.path;
    const port = await freePort();
    await writeFile(
      join(cwd, 'gateway.yaml'),
      [
        'gateway:',
        `  url: http://127.0.0.1:${port}`,
        `  listen: 127.0.0.1:${port}`,
        'sources:',
        '  tracker:',
        '    kind: mcp',
        `    url: ${fixture.url}`,
        '    credentials: { type: bearer, secret: tracker-token }',
        '    caCertificates: [ca.pem]',
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
    // No NODE_EXTRA_CA_CERTS: the CLI trusts the test CA only through the source's caCertificates.
    const env = { GATEWAY_SECRET_TRACKER_TOKEN: UPSTREAM_TOKEN };
    for (const args of [
      ['keys', 'generate', '--out', 'keys'],
      ['import', 'tracker'],
      ['review', 'tracker', '--select', 'stable'],
      ['publish', 'tracker', '--key', 'keys/publisher.private.jwk', '--publisher', 'tester@example.com'],
    ]) {
      const run = await runGateway(args, { cwd, env });
      expect(run.exitCode, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    const logs: string[] = [];
    gateway = await startGateway({
      configPath: join(cwd, 'gateway.yaml'),
      lockPath: join(cwd, 'tools.lock'),
      env,
      logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
      shutdownGraceMs: 1_000,
      authorizerOverride: allowAll(new Set()),
    });
    const servedFrom = fixture.requests.length;
    const client = new Client({ name: 'https-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } } }),
    );
    try {
      const result = await client.callTool({ name: 'stable', arguments: { n: 9 } });
      expect(result.content).toEqual([{ type: 'text', text: '10' }]);
    } finally {
      await client.close();
    }
    const served = fixture.requests.slice(servedFrom);
    expect(served.length).toBeGreaterThan(0);
    for (const headers of served) expect(headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    expect(JSON.stringify(served)).not.toContain(CLIENT_TOKEN);
    expect(logs.join('\n')).not.toContain(UPSTREAM_TOKEN);
  }, 90_000);

  it('a caCertificates file that is no certificate is refused with MCP_CA_CERTIFICATE_UNREADABLE', async () => {
    await writeFile(join(directory.path, 'not-a-ca.pem'), 'hello\n');
    const config = (await readFile(join(directory.path, 'gateway.yaml'), 'utf8')).replace(
      'caCertificates: [ca.pem]',
      'caCertificates: [not-a-ca.pem]',
    );
    await writeFile(join(directory.path, 'gateway.yaml'), config);
    const result = await runGateway(['import', 'tracker'], { cwd: directory.path, env: { GATEWAY_SECRET_TRACKER_TOKEN: UPSTREAM_TOKEN } });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('MCP_CA_CERTIFICATE_UNREADABLE');
    expect(result.stderr).toContain('not-a-ca.pem');
  }, 60_000);
});
