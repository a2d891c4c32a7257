import type { Command } from 'commander';
import { loadConfig } from '@gateway/core';
import { NOBODY_CAN_SIGN_IN, signInMethods } from '@gateway/runtime';
import { createGatewayLogger, startGateway } from '@gateway/server';
import { contextFrom, printResult } from '../context.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the verified tools of tools.lock on {gateway.url}/mcp')
    .option('--listen <host:port>', 'address to listen on (default: gateway.listen, else 127.0.0.1:8080)')
    .option('--url <url>', 'canonical base URL clients use (default: gateway.url); /mcp is served below it')
    .addHelpText(
      'after',
      '\nLoads tools.lock only after it verifies (the same checks as `gateway verify`), watches it and swaps in\n' +
        'each new version that verifies. HTTPS with gateway.tls; plain HTTP is refused unless the listen address\n' +
        'is loopback. Logs are JSON lines on stderr (secrets redacted). SIGTERM or SIGINT stops accepting, lets\n' +
        'calls in flight finish, then exits. Health: GET /healthz (alive), GET /readyz (a verified lock is loaded).\n' +
        '\nExamples:\n' +
        '  gateway serve\n' +
        '  gateway serve --listen 127.0.0.1:9000 --url http://127.0.0.1:9000',
    )
    .action(async (options: { listen?: string; url?: string }, command: Command) => {
      const context = contextFrom(command);
      const gateway = await startGateway({
        configPath: context.configPath,
        lockPath: context.lockPath,
        ...(options.listen ? { listen: options.listen } : {}),
        ...(options.url ? { url: options.url } : {}),
        logger: createGatewayLogger({ destination: 2 }),
      });
      printResult(context, `serving ${gateway.mcpUrl}`, { mcpUrl: gateway.mcpUrl, url: gateway.url });
      // Serving with nobody able to sign in looks healthy but can never approve a client: say so loudly.
      if ((await signInMethods(await loadConfig(context.configPath))).length === 0) {
        context.stderr.write(
          `\nWARNING: ${NOBODY_CAN_SIGN_IN}.\n` +
            'No MCP client can be approved until someone can. Add a person (the password is read from stdin):\n' +
            '  printf "%s" "$PASSWORD" | gateway people add <name>\n' +
            'or configure auth.oidc in gateway.yaml. `gateway doctor` lists everything else serve needs.\n\n',
        );
      }
      await new Promise<void>((resolve) => {
        const stop = () => void gateway.close().then(resolve, resolve);
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
    });
}
