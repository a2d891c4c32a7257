/**
 * An external-style MCP endpoint: the project's fixture server over HTTPS on loopback, with a certificate from
 * a test CA made at test time (openssl), requiring a bearer token the gateway takes from its vault.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startFixtureMcpServer, type FixtureMcpServer } from './support/mcp-fixture-server.js';

const UPSTREAM_TOKEN = 'https-upstream-token-from-vault';
let directory: { path: string; cleanup(): Promise<void> };
let fixture: FixtureMcpServer;
let caPath: string;

function openssl(cwd: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-mcp-https-');
  const cwd = directory.path;
  openssl(cwd, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=gateway test CA');
  openssl(cwd, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  await writeFile(join(cwd, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(cwd, 'x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'san.ext');
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
