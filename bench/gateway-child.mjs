// A gateway in its own process for bench/server.mjs, with the bench-only allow-all authorizer (it exists
// only under bench/ and the test harness; the product has no unauthenticated mode). Reports over IPC.
import { createRequire } from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const moduleLoadStarted = performance.now();
const { startGateway } = await import(pathToFileURL(join(root, 'packages/server/dist/index.js')).href);
const requireFromServer = createRequire(join(root, 'packages/server/package.json'));
const { pino } = await import(pathToFileURL(requireFromServer.resolve('pino')).href);
const moduleLoadMs = performance.now() - moduleLoadStarted;

function allowAll({ registry }) {
  let generation = -1;
  let caller;
  return {
    async authenticate() {
      const snapshot = registry.snapshot();
      if (!caller || generation !== snapshot.generation) {
        const tools = new Map();
        for (const name of snapshot.names) tools.set(name, snapshot.tools.get(name).operation.fingerprint);
        caller = { sessionId: 'session-bench', subject: 'bench', clientId: 'bench', tools, logins: new Set(process.env.BENCH_LOGINS?.split(',') ?? []), expiresAt: Date.now() + 3_600_000 };
        generation = snapshot.generation;
      }
      return { ok: true, caller };
    },
    isSessionOpen: () => true,
  };
}

const started = performance.now();
const gateway = await startGateway({
  configPath: process.env.BENCH_CONFIG,
  logger: pino({ level: 'warn' }),
  authorizerOverride: allowAll,
});
const startupMs = performance.now() - started;
process.send({ type: 'ready', mcpUrl: gateway.mcpUrl, startupMs, moduleLoadMs, tools: gateway.registry.snapshot().names.length });
process.on('message', async (message) => {
  if (message.type === 'rss') process.send({ type: 'rss', rss: process.memoryUsage().rss });
  if (message.type === 'stop') {
    await gateway.close();
    process.exit(0);
  }
});
