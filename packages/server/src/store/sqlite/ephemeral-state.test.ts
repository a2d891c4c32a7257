import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { ephemeralStateContract } from '../contract/ephemeral-state.contract.js';
import { openDatabase } from './database.js';
import { ephemeralStateMigrations, SqliteEphemeralState } from './ephemeral-state.js';

/** Each test: a fresh SQLite file, opened twice (two workers' connections). */
ephemeralStateContract('SQLite', async () => {
  const directory = await temporaryDirectory('gateway-ephemeral-state-');
  const path = join(directory.path, 'gateway.db');
  const databases = [openDatabase(path, ephemeralStateMigrations), openDatabase(path, ephemeralStateMigrations)] as const;
  return {
    first: new SqliteEphemeralState(databases[0]),
    second: new SqliteEphemeralState(databases[1]),
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
});
