/**
 * TEST HARNESS ONLY: a "a person must act first" source for end-to-end tests of the seam itself (both eras'
 * encodings, the requestState); linking an account uses the real gate of per-person logins
 * (src/credentials/person/gate.ts, proven by oauth-person.e2e.test.ts). Calls of the listed tools need a
 * person to act until `complete(url)` is called with the URL the answer named (a test's elicitation handler
 * does that, as a person would by opening the page); then that session may call them. It reaches the gateway
 * only through `startGateway({ personActionGates })`, which neither gateway.yaml nor the CLI can set.
 */
import type { PersonActionGate } from '../../src/calls/pipeline.js';

export function testPersonActionGate(tools: readonly string[]): PersonActionGate & { complete(url: string): void; asked: number } {
  const done = new Set<string>();
  const gate = {
    asked: 0,
    pendingAction(caller: { sessionId: string }, tool: { entry: { tool: string } }, _argumentsValue: unknown) {
      const name = (tool as { listed?: { name?: string } }).listed?.name ?? tool.entry.tool;
      if (!tools.includes(name)) return undefined;
      const key = `${caller.sessionId}/${name}`;
      if (done.has(key)) return undefined;
      gate.asked += 1;
      return {
        reason: 'PERSON_ACTION_REQUIRED' as const,
        message: `approve the call of ${name} in your browser`,
        url: `https://gateway.test/act?key=${encodeURIComponent(key)}`,
      };
    },
    complete(url: string) {
      done.add(new URL(url).searchParams.get('key')!);
    },
  };
  return gate;
}
