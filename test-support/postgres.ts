/**
 * A real PostgreSQL for tests: the throw-away cluster of test-support/postgres-cluster.mjs (Debian's server
 * binaries, a temporary folder, a free loopback port, SCRAM over TCP, `nobody` under root), one per test file.
 * When the binaries are missing the test FAILS with the command that installs them (no silent skip).
 */
import { afterAll, beforeAll } from 'vitest';
import { type PostgresServer, START_TIMEOUT_SECONDS, startPostgres } from './postgres-cluster.mjs';

export { type PostgresServer, postgresBinaries, startPostgres, stopWhenGone } from './postgres-cluster.mjs';

/**
 * One PostgreSQL for the calling test file: started before its first test, stopped and removed after its last.
 * Read `server` inside a test or hook (it is set once the cluster is up).
 */
export function postgresForThisFile(): { server: PostgresServer } {
  const holder = {} as { server: PostgresServer };
  beforeAll(
    async () => {
      holder.server = await startPostgres();
    },
    (START_TIMEOUT_SECONDS * 2 + 30) * 1000,
  );
  afterAll(async () => {
    await holder.server?.stop();
  });
  return holder;
}
