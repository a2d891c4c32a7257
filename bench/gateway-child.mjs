// A gateway in its own process for bench/server.mjs, started exactly as `gateway serve` starts it: with the
// gateway's own OAuth authorization (no authorizer override), so every /mcp request the load generator sends
// is authenticated with a real session's access token. Reports over IPC.
import { pathToFileURL, fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const moduleLoadStarted = performance.now();
const { startGateway, createGatewayLogger, choosesSemiSpace, SEMI_SPACE_FLAG } = await import(
  pathToFileURL(join(root, 'packages/server/dist/index.js')).href
);
const moduleLoadMs = performance.now() - moduleLoadStarted;
// A bench measures what `gateway serve` runs: the Node flags of its bin (bench/support.mjs, gatewayExecArgv).
if (!choosesSemiSpace(process.execArgv, process.env.NODE_OPTIONS)) {
  throw new Error(`bench/gateway-child.mjs runs without ${SEMI_SPACE_FLAG}: fork it with gatewayExecArgv() of bench/support.mjs`);
}

const started = performance.now();
const gateway = await startGateway({
  configPath: process.env.BENCH_CONFIG,
  // The logger `gateway serve` uses (JSON lines on stderr, redaction, GATEWAY_LOG_LEVEL, default info); the
  // bench points this process's stderr at a log file.
  logger: createGatewayLogger({ destination: 2 }),
});
const startupMs = performance.now() - started;
const { names } = gateway.registry.snapshot();
process.send({ type: 'ready', url: gateway.url, mcpUrl: gateway.mcpUrl, startupMs, moduleLoadMs, tools: names.length, toolNames: names });
// The bench that forked this process is gone (stopped with Ctrl-C or killed): do not outlive it.
process.once('disconnect', () => process.exit(0));
process.on('message', async (message) => {
  // bench/memory.mjs runs this process with --expose-gc and asks for a full collection first, so growth that
  // survives it (a leak) is told apart from garbage not yet collected.
  if (message.type === 'rss' && message.gc && typeof globalThis.gc === 'function') globalThis.gc();
  if (message.type === 'rss') process.send({ type: 'rss', rss: process.memoryUsage().rss, memory: process.memoryUsage() });
  if (message.type === 'stop') {
    await gateway.close();
    process.exit(0);
  }
});
