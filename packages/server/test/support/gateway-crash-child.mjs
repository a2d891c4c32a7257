// The real gateway (built code, packages/server/dist) in a process of its own, for the webhooks crash test:
// started as `gateway serve` starts it except for a fixed session (the authorizer override: no OAuth round
// trips) and a short webhook lease, so a restart after SIGKILL takes over delivery within a second.
import { pino } from 'pino';
import { startGateway } from '../../dist/index.js';

const tools = ['get_order', 'search_orders'];
const gateway = await startGateway({
  configPath: process.env.CRASH_CONFIG,
  lockPath: process.env.CRASH_LOCK,
  // CRASH_LOG_LEVEL: the gateway's log on stdout, for tests that read it.
  logger: pino({ level: process.env.CRASH_LOG_LEVEL ?? 'silent' }),
  webhookLeaseMs: 1_000,
  authorizerOverride: ({ registry }) => ({
    async authenticate() {
      const snapshot = registry.snapshot();
      const fingerprints = new Map(tools.map((name) => [name, snapshot.tools.get(name).operation.fingerprint]));
      return {
        ok: true,
        caller: {
          sessionId: 'session-5',
          subject: 'alice@example.com',
          clientId: 'client-crash',
          tools: fingerprints,
          logins: new Set(['orders/api_key']),
          expiresAt: Date.now() + 3_600_000,
        },
      };
    },
    sessionState: () => 'open',
  }),
});
process.send({ type: 'ready', mcpUrl: gateway.mcpUrl });
