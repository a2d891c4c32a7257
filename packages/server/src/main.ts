#!/usr/bin/env node
/**
 * `node packages/server/dist/main.js [--config gateway.yaml] [--lock tools.lock] [--listen host:port] [--url URL]`
 * (or GATEWAY_CONFIG, GATEWAY_LOCK, GATEWAY_LISTEN, GATEWAY_URL). Reads only argv/env and starts the
 * gateway; `gateway serve` is the documented way to run it.
 */
import { parseArgs } from 'node:util';
import { startGateway } from './gateway.js';

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    lock: { type: 'string' },
    listen: { type: 'string' },
    url: { type: 'string' },
  },
});

try {
  await startGateway({
    configPath: values.config ?? process.env.GATEWAY_CONFIG ?? 'gateway.yaml',
    ...((values.lock ?? process.env.GATEWAY_LOCK) ? { lockPath: (values.lock ?? process.env.GATEWAY_LOCK)! } : {}),
    ...((values.listen ?? process.env.GATEWAY_LISTEN) ? { listen: (values.listen ?? process.env.GATEWAY_LISTEN)! } : {}),
    ...((values.url ?? process.env.GATEWAY_URL) ? { url: (values.url ?? process.env.GATEWAY_URL)! } : {}),
    handleSignals: true,
  });
} catch (error) {
  const code = (error as { code?: string }).code ?? 'INTERNAL_ERROR';
  process.stderr.write(`error ${code}: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
