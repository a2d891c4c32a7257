/**
 * A serving gateway loads only what serving uses (docs/server.md, "Memory"): `gateway serve`, run as an operator
 * runs it, answers a real tool call for an OpenAPI source on the env vault, and the packages its process
 * loaded (recorded by test-support/module-recorder.mjs) include none of those imported at first use only: the
 * MCP client SDK (MCP sources), execa (the exec vault), the OpenAPI bundler and validator (importing a
 * document), the review checklist and the OpenTelemetry SDK (traces on). A static import of any of them,
 * anywhere on the serving path, fails it.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeopleDirectory } from '@gateway/runtime';
import { gatewayBinary, repositoryRoot } from '../../../test-support/cli.js';
import { mcpRequest } from './support/fixtures.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { approve, PERSON, pkce, registerClient, tokenRequest } from './oauth-support/authorization-server.js';

const RECORDER = join(repositoryRoot, 'test-support', 'module-recorder.mjs');
const REDIRECT = 'http://127.0.0.1:9/callback';

/** Packages a gateway serving OpenAPI tools from the env vault must not load. */
const LOADED_AT_FIRST_USE_ONLY = [
  '@modelcontextprotocol/client',
  'execa',
  '@readme/openapi-parser',
  '@seriousme/openapi-schema-validator',
  '@inquirer/checkbox',
  // Traces are off unless telemetry.traces.endpoint is set.
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/exporter-trace-otlp-http',
];

let workspace: Workspace;

beforeAll(async () => {
  workspace = await prepareWorkspace();
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add(PERSON.name, PERSON.password);
}, 90_000);

afterAll(async () => {
  await workspace?.cleanup();
});

/** Runs the built `gateway` with the module recorder; returns the child and the file it records into. */
function recordedGateway(args: string[], record: string) {
  return spawn(process.execPath, ['--import', RECORDER, gatewayBinary, ...args], {
    cwd: workspace.directory,
    env: { ...process.env, ...workspace.env, MODULE_RECORD: record, NO_COLOR: '1', GATEWAY_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function recordedPackages(record: string): Promise<string[]> {
  return (await readFile(record, 'utf8')).split('\n').filter(Boolean);
}

async function sessionToken(issuer: string, mcpUrl: string): Promise<string> {
  const registered = await registerClient(issuer, {
    client_name: 'lazy modules test',
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
  });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    { issuer, mcpUrl },
    { clientId, redirectUri: REDIRECT, challenge, method: 'S256' },
    { tools: ['get_order'], logins: ['orders/api_key'] },
  );
  const tokens = await tokenRequest(issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: mcpUrl,
  });
  expect(tokens.status).toBe(200);
  return tokens.body.access_token as string;
}

describe('a serving gateway loads only what serving uses', () => {
  it('gateway serve answers a tool call without loading the MCP client, execa, the OpenAPI parsers or the checklist', async () => {
    const record = join(workspace.directory, 'serve-modules.txt');
    const child = recordedGateway(['serve'], record);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 20_000;
      while (!stdout.includes('serving') && Date.now() < deadline && child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stdout, stderr).toContain('serving');
      const issuer = `http://127.0.0.1:${workspace.port}`;
      const mcpUrl = `${issuer}/mcp`;
      const token = await sessionToken(issuer, mcpUrl);
      const response = await fetch(mcpUrl, {
        method: 'POST',
        ...mcpRequest('2026-07-28', 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, token),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('Ada Lovelace');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    const loaded = await recordedPackages(record);
    // The recorder saw the serving path itself (so an empty record cannot pass)...
    expect(loaded).toEqual(expect.arrayContaining(['fastify', '@modelcontextprotocol/server', 'commander']));
    // ...and none of what is loaded at first use only.
    expect(loaded.filter((name) => LOADED_AT_FIRST_USE_ONLY.includes(name))).toEqual([]);
  });

  it('a package imported at first use is loaded when it is used: gateway import loads the OpenAPI validator', async () => {
    const record = join(workspace.directory, 'import-modules.txt');
    const child = recordedGateway(['import', 'orders'], record);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    expect(await recordedPackages(record)).toContain('@seriousme/openapi-schema-validator');
  });
});
