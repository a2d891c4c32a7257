/**
 * The README's workflow, followed literally (issue 20): the commands and the gateway.yaml between
 * `<!-- workflow:start -->` and `<!-- workflow:end -->` in README.md run, in order and as written, in an empty
 * temporary folder, with `gateway` on PATH resolving to the built CLI. The only substitutions are the ones the
 * README tells its reader to make: their OpenAPI document (written here as `openapi.yaml`, describing an API of
 * this test on 127.0.0.1 that demands an API key), the gateway's port (8080 may be taken on a test machine),
 * and what the reader types (the API key for `gateway secrets set <name>`, the password for
 * `gateway people add <name>`). Then a real MCP SDK client with an OAuth provider connects, the person the
 * README added approves it in headless Chromium, and a tool call reaches the API carrying the key from the
 * vault. A step missing from the README (a key, a secret, a person, the network allowance) makes a command
 * fail, `gateway doctor` fail, or the sign-in fail, so this test fails with the line that broke.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { execa } from 'execa';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { gatewayBinary, repositoryRoot, temporaryDirectory } from '../../../test-support/cli.js';
import { MemoryOAuthClientProvider } from '../../../test-support/oauth-client.js';
import { closedPort } from './workspace.js';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
/** The port the README's gateway.url and commands use; replaced by a free one. */
const README_PORT = '8080';

type Step = { kind: 'run'; line: string } | { kind: 'write'; file: string; text: string };

/**
 * The marked block as steps: every line of a ```sh fence is a command (comments after ` # ` and blank lines
 * dropped); a ```yaml fence whose first line is `# <file>` is that file's whole content.
 */
function workflowSteps(readme: string): Step[] {
  const start = readme.indexOf('<!-- workflow:start -->');
  const end = readme.indexOf('<!-- workflow:end -->');
  if (start < 0 || end < start) throw new Error('README.md has no <!-- workflow:start --> … <!-- workflow:end --> block');
  const block = readme.slice(start, end);
  const steps: Step[] = [];
  for (const fence of block.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    const [, language, body] = fence as unknown as [string, string, string];
    if (language === 'sh') {
      for (const raw of body.split('\n')) {
        const line = raw.replace(/\s+#\s.*$/, '').trim();
        if (line !== '' && !line.startsWith('#')) steps.push({ kind: 'run', line });
      }
    } else if (language === 'yaml') {
      const file = /^# (\S+)\n/.exec(body)?.[1];
      if (!file) throw new Error(`a yaml block in the workflow does not name its file on its first line: ${body.slice(0, 40)}`);
      steps.push({ kind: 'write', file, text: body });
    } else {
      throw new Error(`unexpected \`\`\`${language} block in the workflow`);
    }
  }
  return steps;
}

/** The API of "the reader": GET /items needs X-API-Key; every key it receives is recorded. */
async function startApi(apiKey: string): Promise<{ server: Server; url: string; keysSeen: (string | undefined)[] }> {
  const keysSeen: (string | undefined)[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const key = request.headers['x-api-key'];
    keysSeen.push(typeof key === 'string' ? key : undefined);
    if (key !== apiKey) return void response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad api key"}');
    if (request.method === 'GET' && request.url === '/items') {
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ id: 'item-7', name: 'seven' }]));
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, keysSeen };
}

function openApiDocument(serverUrl: string): string {
  return [
    'openapi: 3.1.0',
    'info: { title: Items, version: 1.0.0 }',
    `servers: [{ url: '${serverUrl}' }]`,
    'security: [{ ApiKeyAuth: [] }]',
    'paths:',
    '  /items:',
    '    get:',
    '      operationId: listItems',
    '      summary: List the items',
    '      responses:',
    "        '200':",
    '          description: the items',
    '          content: { application/json: { schema: { type: array, items: { type: object } } } }',
    'components:',
    '  securitySchemes:',
    '    ApiKeyAuth: { type: apiKey, in: header, name: X-API-Key }',
    '',
  ].join('\n');
}

describe('the README workflow', () => {
  const apiKey = `key-${randomBytes(12).toString('hex')}`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  let folder: { path: string; cleanup: () => Promise<void> };
  let binDirectory: { path: string; cleanup: () => Promise<void> };
  let api: Awaited<ReturnType<typeof startApi>>;
  let callback: { server: Server; url: string };
  let browser: Browser | undefined;
  let serve: ChildProcess | undefined;

  beforeAll(async () => {
    folder = await temporaryDirectory('gateway-readme-');
    binDirectory = await temporaryDirectory('gateway-readme-bin-');
    api = await startApi(apiKey);
    const server = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    callback = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/callback` };
  });

  afterAll(async () => {
    await browser?.close();
    if (serve && serve.exitCode === null) {
      serve.kill('SIGTERM');
      await new Promise((resolve) => serve!.once('exit', resolve));
    }
    callback?.server.closeAllConnections();
    await new Promise((resolve) => callback?.server.close(resolve));
    api?.server.closeAllConnections();
    await new Promise((resolve) => api?.server.close(resolve));
    await folder?.cleanup();
    await binDirectory?.cleanup();
  });

  it('works when followed literally in an empty folder: init … serve, a client approved in the browser, ' +
    'a call with the key from the vault', async () => {
    const steps = workflowSteps(await readFile(join(repositoryRoot, 'README.md'), 'utf8'));
    expect(steps.map((step) => (step.kind === 'run' ? step.line.split(' ').slice(0, 2).join(' ') : `write ${step.file}`)).at(-1)).toBe(
      'gateway serve',
    );
    expect(await readdir(folder.path)).toEqual([]);

    // `gateway` on PATH is the built CLI; nothing from this process's gateway environment leaks in.
    await mkdir(binDirectory.path, { recursive: true });
    const shim = join(binDirectory.path, 'gateway');
    await writeFile(shim, `#!/bin/sh\nexec "${process.execPath}" "${gatewayBinary}" "$@"\n`);
    await chmod(shim, 0o755);
    const env: Record<string, string> = {
      PATH: `${binDirectory.path}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: binDirectory.path,
      NO_COLOR: '1',
      GATEWAY_LOG_LEVEL: 'warn',
    };

    // The reader's part: their document in the folder, a free port instead of 8080.
    await writeFile(join(folder.path, 'openapi.yaml'), openApiDocument(api.url));
    const port = String(await closedPort());
    const local = (text: string) => text.replaceAll(`127.0.0.1:${README_PORT}`, `127.0.0.1:${port}`);
    let person: string | undefined;
    let gatewayUrl: string | undefined;

    for (const step of steps) {
      if (step.kind === 'write') {
        const text = local(step.text);
        gatewayUrl = /^\s+url:\s*(\S+)/m.exec(text)?.[1] ?? gatewayUrl;
        await writeFile(join(folder.path, step.file), text);
        continue;
      }
      const line = local(step.line);
      if (/^gateway serve\b/.test(line)) {
        serve = spawn('bash', ['-c', `exec ${line}`], { cwd: folder.path, env, stdio: ['ignore', 'pipe', 'pipe'] });
        continue;
      }
      // What the reader types: the API key for the one secret typed in, the password for the person.
      let input = '';
      const secret = /^gateway secrets set (\S+)$/.exec(line);
      const added = /^gateway people add (\S+)/.exec(line);
      if (secret) input = apiKey;
      if (added) {
        person = added[1];
        input = `${password}\n`;
      }
      const result = await execa('bash', ['-c', line], { cwd: folder.path, env, extendEnv: false, input, reject: false, timeout: 60_000 });
      expect(result.exitCode, `README step \`${step.line}\` failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
    }

    expect(serve, 'the README workflow never runs `gateway serve`').toBeDefined();
    expect(person, 'the README workflow adds nobody who could sign in').toBeDefined();
    expect(gatewayUrl).toBe(`http://127.0.0.1:${port}`);
    let output = '';
    serve!.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    serve!.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 30_000;
    let ready = false;
    while (!ready && Date.now() < deadline && serve!.exitCode === null) {
      ready = await fetch(`${gatewayUrl}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(ready, `gateway serve did not become ready:\n${output}`).toBe(true);
    expect(output).not.toContain('nobody can sign in');

    // A client connects: 401 → discovery → registration → the browser, where the person approves.
    const provider = new MemoryOAuthClientProvider(callback.url, 'README workflow client');
    const mcpUrl = new URL(`${gatewayUrl}/mcp`);
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'readme', version: '1.0.0' }).connect(transport)).rejects.toThrow();
    expect(provider.authorizationUrl, 'the client was never sent to the browser').toBeDefined();

    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
    const page = await browser.newPage();
    await page.goto(provider.authorizationUrl!.href);
    await page.fill('#name', person!);
    await page.fill('#password', password);
    await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
    for (const box of await page.locator('input[name="tool"]').all()) await box.check();
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.click('button[value="allow"]')]);
    const code = new URL(page.url()).searchParams.get('code');
    expect(code, `no authorization code in ${page.url()}`).toBeTruthy();

    await transport.finishAuth(code!);
    const client = new Client({ name: 'readme', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    try {
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(['list_items']);
      api.keysSeen.length = 0;
      const result = (await client.callTool({ name: 'list_items', arguments: {} })) as {
        isError?: boolean;
        content: { type: string; text?: string }[];
      };
      expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
      expect(JSON.stringify(result.content)).toContain('item-7');
      // The call reached the API with the key the reader typed into the vault.
      expect(api.keysSeen).toEqual([apiKey]);
    } finally {
      await client.close();
    }

    // The README's next step: `gateway receipts list` in the same folder shows the call.
    const receipts = await execa('bash', ['-c', 'gateway receipts list --json'], {
      cwd: folder.path,
      env,
      extendEnv: false,
      reject: false,
      timeout: 30_000,
    });
    expect(receipts.exitCode, receipts.stderr).toBe(0);
    expect(receipts.stdout).toContain('list_items');
    expect(receipts.stdout).toContain('allowed');
    expect(receipts.stdout).not.toContain(apiKey);
  }, 120_000);
});
