// bench/mcp-source: what the gateway adds to a tools/call of an MCP source. The same SDK v2 client calls
// server-everything's `echo` directly and through the gateway (/mcp, allow-all authorizer: the bench measures
// the governed call path, not OAuth), for both upstream transports: stdio (the gateway runs its own
// server-everything process; the direct client spawns another) and Streamable HTTP on loopback (one
// server-everything process serves both). One run, interleaved rounds (machine noise hits every series alike),
// a bounded number of sequential calls; prints the p50 of each and the difference.
// Run after `pnpm build`: node bench/mcp-source.mjs (about 20 s; BENCH_ROUNDS, BENCH_CALLS to change).
import { execFileSync, fork, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchChild, benchDirectory, freePort, gatewayExecArgv, RECEIPTS_KEY_ENV, serveWithAllowAllAuthorizer } from './support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const serverRequire = createRequire(join(root, 'packages/server/package.json'));
const ENV = { ...process.env, ...RECEIPTS_KEY_ENV, NO_COLOR: '1' };
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CALLS_PER_ROUND = Number(process.env.BENCH_CALLS ?? 100);
const everything = join(dirname(serverRequire.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

if (process.argv[2] === 'child') {
  // One gateway, as `gateway serve` starts it, with the allow-all authorizer (bench/support.mjs).
  await serveWithAllowAllAuthorizer({ logins: [] });
} else {
  const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(serverRequire.resolve('@modelcontextprotocol/client')).href);
  const { StdioClientTransport } = await import(pathToFileURL(serverRequire.resolve('@modelcontextprotocol/client/stdio')).href);

  // server-everything over Streamable HTTP on loopback.
  const httpPort = await freePort();
  const httpServer = benchChild(
    spawn(process.execPath, [everything, 'streamableHttp'], {
      env: { ...ENV, PORT: String(httpPort) },
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 20_000);
    httpServer.stderr.on('data', (chunk) => {
      if (String(chunk).includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const upstreamUrl = `http://127.0.0.1:${httpPort}/mcp`;

  // A workspace made by the real CLI: both sources imported, `echo` of each reviewed and published.
  const directory = benchDirectory('gateway-bench-mcp-');
  const port = await freePort();
  writeFileSync(
    join(directory, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  stdio:',
      '    kind: mcp',
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(everything)}, stdio]`,
      '  http:',
      '    kind: mcp',
      `    url: ${upstreamUrl}`,
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
  const cli = (args) =>
    execFileSync(process.execPath, [join(root, 'packages/cli/dist/main.js'), ...args], { cwd: directory, env: ENV, stdio: 'ignore' });
  cli(['keys', 'generate', '--out', 'keys']);
  for (const [source, tool] of [
    ['stdio', 'echo'],
    ['http', 'http__echo'],
  ]) {
    cli(['import', source]);
    cli(['review', source, '--select', tool]);
    cli(['publish', source, '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com']);
  }
  const child = benchChild(
    fork(fileURLToPath(import.meta.url), ['child'], {
      env: { ...ENV, BENCH_CONFIG: join(directory, 'gateway.yaml') },
      stdio: 'inherit',
      execArgv: gatewayExecArgv(),
    }),
  );
  const mcpUrl = await new Promise((resolve) => child.once('message', (message) => resolve(message.mcpUrl)));

  const connect = async (transport) => {
    const client = new Client({ name: 'bench', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(transport);
    return client;
  };
  const clients = {
    'stdio direct': {
      client: await connect(new StdioClientTransport({ command: process.execPath, args: [everything, 'stdio'], stderr: 'ignore' })),
      tool: 'echo',
    },
    'stdio via gateway': {
      client: await connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer bench' } } }),
      ),
      tool: 'echo',
    },
    'http direct': { client: await connect(new StreamableHTTPClientTransport(new URL(upstreamUrl))), tool: 'echo' },
    'http via gateway': {
      client: await connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer bench' } } }),
      ),
      tool: 'http__echo',
    },
  };
  const timings = Object.fromEntries(Object.keys(clients).map((name) => [name, []]));
  const round = async (name, sink, count) => {
    const { client, tool } = clients[name];
    for (let index = 0; index < count; index += 1) {
      const started = performance.now();
      const result = await client.callTool({ name: tool, arguments: { message: `m${index}` } });
      const elapsed = performance.now() - started;
      if (result.isError || result.content?.[0]?.text !== `Echo: m${index}`)
        throw new Error(`${name}: unexpected answer ${JSON.stringify(result).slice(0, 200)}`);
      sink?.push(elapsed);
    }
  };
  // Warm-up: the gateway starts its stdio upstream and connects its HTTP one on first use.
  for (const name of Object.keys(clients)) await round(name, undefined, 30);
  const names = Object.keys(clients);
  for (let index = 0; index < ROUNDS; index += 1) {
    // Rotate the order each round, so no series always runs on a warmer machine.
    for (let offset = 0; offset < names.length; offset += 1) {
      const name = names[(index + offset) % names.length];
      await round(name, timings[name], CALLS_PER_ROUND);
    }
  }
  const p50 = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const row = (cells) => `| ${cells.join(' | ')} |`;
  console.log(`tools/call p50 of server-everything 'echo', SDK v2 client, ${ROUNDS * CALLS_PER_ROUND} sequential calls per series:`);
  console.log(row(['upstream', 'direct p50 ms', 'through the gateway p50 ms', 'added p50 ms']));
  console.log(row(['---', '---:', '---:', '---:']));
  for (const transport of ['stdio', 'http']) {
    const direct = p50(timings[`${transport} direct`]);
    const gateway = p50(timings[`${transport} via gateway`]);
    console.log(
      row([transport === 'stdio' ? 'stdio' : 'Streamable HTTP', direct.toFixed(3), gateway.toFixed(3), (gateway - direct).toFixed(3)]),
    );
  }

  for (const { client } of Object.values(clients)) await client.close().catch(() => undefined);
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  httpServer.kill();
}
