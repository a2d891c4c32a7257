import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Files of the authorization area that still reach SQLite directly: state not yet behind a port (next slices). */
const NOT_YET_PORTED = ['oauth/rate-limit.ts', 'types.ts'];

/** The contract suites run on these adapters from ../contract/contract.test.ts. */
describe('the SQLite adapters', () => {
  it('are the only files of the authorization area that name better-sqlite3, SqliteDatabase or prepare()', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith(join('stores', 'sqlite')))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(area, file), 'utf8')))
      .map((file) => relative(area, join(area, file)).split('\\').join('/'))
      .sort();
    expect(naming).toEqual(NOT_YET_PORTED);
  });
});
