/**
 * The authorization-server scenarios of @modelcontextprotocol/conformance 0.2.0-alpha.12 (which needs
 * Node 24: `npm i --prefix .tmp/node24 node@24`, done by .ci/run), with Chromium doing the person's part.
 * Fails with the install command when that Node 24 binary is absent; results are in docs/conformance.md.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { repositoryRoot, temporaryDirectory } from '../../../test-support/cli.js';
import { freePort } from './support/net.js';
import { PERSON, startAuthorizationServer } from './oauth-support/authorization-server.js';

const NODE_24 = join(repositoryRoot, '.tmp', 'node24', 'node_modules', '.bin', 'node');
const CONFORMANCE = join(repositoryRoot, 'node_modules', 'conformance-2026', 'dist', 'index.js');
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

describe('MCP conformance: authorization server', () => {
  it('every authorization-server scenario passes', async () => {
    // A missing runner must fail loudly: a skipped conformance check would read as a pass in CI.
    if (!existsSync(NODE_24)) throw new Error(`Node 24 is missing at ${NODE_24}: run \`npm i --prefix .tmp/node24 node@24\``);
    if (!existsSync(CONFORMANCE)) throw new Error(`the conformance runner is missing at ${CONFORMANCE}: run \`pnpm install\``);
    const callbackPort = await freePort();
    const server = await startAuthorizationServer({
      authYaml: [
        'clients:',
        '  - clientId: conformance',
        '    name: MCP conformance suite',
        `    redirectUris: [http://127.0.0.1:${callbackPort}/callback]`,
      ].join('\n'),
    });
    const output = await temporaryDirectory('gateway-conformance-');
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
    try {
      const child = spawn(
        NODE_24,
        [
          CONFORMANCE,
          'authorization',
          '--url',
          server.issuer,
          '--client-id',
          'conformance',
          '--resource',
          server.mcpUrl,
          '-p',
          String(callbackPort),
          '-o',
          output.path,
        ],
        {
          cwd: repositoryRoot,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const authorizationUrl = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no authorization URL printed:\n${stdout}`)), 60_000);
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = new RegExp(`^(${server.issuer.replace(/[.]/g, '\\.')}/authorize\\?\\S+)$`, 'm').exec(stdout);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.on('exit', () => reject(new Error(`conformance exited early:\n${stdout}`)));
      });
      const page = await (await browser.newContext()).newPage();
      await page.goto(authorizationUrl);
      await page.fill('#name', PERSON.name);
      await page.fill('#password', PERSON.password);
      await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
      await page.check('input[name="tool"][value="search_orders"]');
      await Promise.all([
        page.waitForURL((url) => url.href.startsWith(`http://127.0.0.1:${callbackPort}/callback`)),
        page.click('button[value="allow"]'),
      ]);
      const exitCode = await new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) resolve(child.exitCode);
        else child.on('exit', (code) => resolve(code));
      });
      process.stdout.write(`\n--- conformance authorization ---\n${stdout}\n`);
      expect(stdout).not.toMatch(/FAILURE|✗/);
      expect(exitCode, stdout).toBe(0);
    } finally {
      await browser.close();
      await server.close();
      await output.cleanup();
    }
  }, 180_000);
});
