import type { Command } from 'commander';
import { loadConfig } from '@gateway/core';
import { NOBODY_CAN_SIGN_IN, signInMethods } from '@gateway/runtime';
import {
  SEMI_SPACE_FLAG,
  choosesSemiSpace,
  createGatewayLogger,
  currentWorkerId,
  isRestartedWorker,
  parseWorkers,
  startGateway,
  superviseWorkers,
  type WorkerMessage,
} from '@gateway/server';
import { contextFrom, printResult } from '../context.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the verified tools of tools.lock on {gateway.url}/mcp')
    .option('--listen <host:port>', 'address to listen on (default: gateway.listen, else 127.0.0.1:8080)')
    .option('--url <url>', 'canonical base URL clients use (default: gateway.url); /mcp is served below it')
    .option('--workers <n>', 'worker processes sharing the listen socket and the database (default 1: no workers)')
    .addHelpText(
      'after',
      '\nLoads tools.lock only after it verifies (the same checks as `gateway verify`), watches it and swaps in\n' +
        'each new version that verifies. HTTPS with gateway.tls; plain HTTP is refused unless the listen address\n' +
        'is loopback. Logs are JSON lines on stderr (secrets redacted). SIGTERM or SIGINT stops accepting, lets\n' +
        'calls in flight finish, then exits. Health: GET /healthz (alive), GET /readyz (a verified lock is loaded).\n' +
        '\n--workers N runs N gateway processes behind the one port (node:cluster) on the one storage (the SQLite file\n' +
        'or PostgreSQL): all share sessions through the database, the drift-leader lease names the one that checks\n' +
        'drift, a crashed worker is restarted, SIGTERM stops them all (docs/server.md).\n' +
        '\nExamples:\n' +
        '  gateway serve\n' +
        '  gateway serve --listen 127.0.0.1:9000 --url http://127.0.0.1:9000\n' +
        '  gateway serve --workers 4',
    )
    .action(async (options: { listen?: string; url?: string; workers?: string }, command: Command) => {
      const context = contextFrom(command);
      const workers = options.workers === undefined ? 1 : parseWorkers(options.workers);
      const workerId = currentWorkerId();
      const rootLogger = createGatewayLogger({ destination: 2 });
      if (workers > 1 && workerId === undefined) {
        // The primary: forks and supervises; it serves nothing itself.
        const supervisor = await superviseWorkers({ count: workers, log: rootLogger.child({ role: 'primary' }), handleSignals: true });
        printResult(context, `serving ${supervisor.mcpUrl} with ${workers} workers`, {
          mcpUrl: supervisor.mcpUrl,
          url: supervisor.url,
          workers,
        });
        await supervisor.stopped;
        rootLogger.flush();
        return;
      }
      // Each line a worker logs names it, so an operator can tell them apart.
      const logger = workerId === undefined ? rootLogger : rootLogger.child({ worker: workerId, pid: process.pid });
      // main.ts re-executes `serve` with the flag where Node has process.execve (22.15+ on POSIX); on Node 20 and
      // Windows, or when node is started by hand without it (a service unit, a container's CMD), say so.
      if (!choosesSemiSpace(process.execArgv, process.env.NODE_OPTIONS)) {
        logger.warn(
          { flag: SEMI_SPACE_FLAG },
          `node runs without ${SEMI_SPACE_FLAG}: this gateway may hold ~30 MB more memory than it needs; ` +
            `set NODE_OPTIONS=${SEMI_SPACE_FLAG} or start it as \`node ${SEMI_SPACE_FLAG} …/main.js serve\` (docs/server.md, "Memory")`,
        );
      }
      let gateway: Awaited<ReturnType<typeof startGateway>>;
      try {
        gateway = await startGateway({
          configPath: context.configPath,
          lockPath: context.lockPath,
          ...(options.listen ? { listen: options.listen } : {}),
          ...(options.url ? { url: options.url } : {}),
          logger,
          ...(workerId === undefined
            ? {}
            : {
                worker: {
                  id: workerId,
                  // Worker 1 starts alone at the cluster's start (cluster.ts); a restarted one joins running ones.
                  mayRotateSigningKeys: workerId === 1 && !isRestartedWorker(),
                  startsAlone: workerId === 1 && !isRestartedWorker(),
                },
              }),
        });
      } catch (error) {
        if (workerId !== undefined) {
          const failure: WorkerMessage = {
            type: 'gateway-failed',
            error: { code: (error as { code?: string }).code ?? 'INTERNAL_ERROR', message: (error as Error).message },
          };
          process.send?.(failure);
        }
        throw error;
      }
      const running = gateway;
      if (workerId === undefined) printResult(context, `serving ${running.mcpUrl}`, { mcpUrl: running.mcpUrl, url: running.url });
      else process.send?.({ type: 'gateway-ready', mcpUrl: running.mcpUrl, url: running.url } satisfies WorkerMessage);
      // Serving with nobody able to sign in looks healthy but can never approve a client: say so loudly (once).
      if ((workerId === undefined || workerId === 1) && (await signInMethods(await loadConfig(context.configPath))).length === 0) {
        context.stderr.write(
          `\nWARNING: ${NOBODY_CAN_SIGN_IN}.\n` +
            'No MCP client can be approved until someone can. Add a person (the password is read from stdin):\n' +
            '  printf "%s" "$PASSWORD" | gateway people add <name>\n' +
            'or configure auth.oidc in gateway.yaml. `gateway doctor` lists everything else serve needs.\n\n',
        );
      }
      await new Promise<void>((resolve) => {
        const stop = () => void running.close().then(resolve, resolve);
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
        // A worker whose primary is gone has no one to restart or stop it: it stops too.
        if (workerId !== undefined) process.once('disconnect', stop);
      });
      if (workerId !== undefined) process.exit(0);
    });
}
