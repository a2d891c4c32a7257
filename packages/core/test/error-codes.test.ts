import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, EXIT_CODES, GatewayError, MCP_UNSUPPORTED_REASON_CODES, UNSUPPORTED_REASON_CODES, renderErrorDocs } from '../src/index.js';
import { repositoryRoot } from '../../../test-support/cli.js';

// Upper-snake literals in the source that are not error codes of ours.
const NOT_ERROR_CODES = new Set([
  'GATEWAY_PUBLISH_KEY', // environment variable names
  'GATEWAY_VAULT_KEY',
  'GATEWAY_WORKER_ID',
  'GATEWAY_WORKER_RESTARTED',
  'UND_ERR_BODY_TIMEOUT', // undici's own error codes, mapped to ours
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'SQLITE_CONSTRAINT_PRIMARYKEY', // SQLite's (better-sqlite3's) own error code, read by the receipt store
]);

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the error registry', () => {
  it('docs/errors.md is exactly what the registry renders (run `pnpm gen:errors` after changing a code)', () => {
    const written = readFileSync(join(repositoryRoot, 'docs', 'errors.md'), 'utf8');
    expect(written).toBe(renderErrorDocs());
  });

  it('declares its codes in sorted order, so branches that add codes merge line by line', () => {
    const codes = Object.keys(ERRORS);
    expect(codes).toEqual([...codes].sort());
  });

  it('every upper-snake literal the source can report is a registered code or an unsupported-operation reason', () => {
    const reasons = new Set<string>([...UNSUPPORTED_REASON_CODES, ...MCP_UNSUPPORTED_REASON_CODES]);
    const found = new Set<string>();
    for (const packageName of ['core', 'runtime', 'cli', 'server']) {
      for (const file of sourceFiles(join(repositoryRoot, 'packages', packageName, 'src'))) {
        if (file.endsWith('error-codes.ts')) continue;
        for (const match of readFileSync(file, 'utf8').matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) {
          if (!NOT_ERROR_CODES.has(match[1]!)) found.add(match[1]!);
        }
      }
    }
    expect(found.size).toBeGreaterThan(50);
    const unregistered = [...found].filter((code) => !Object.hasOwn(ERRORS, code) && !reasons.has(code)).sort();
    expect(unregistered).toEqual([]);
  });

  it("an error's category, hence its exit code, comes from the registry", () => {
    const error = new GatewayError('KEY_UNREADABLE', 'no key file');
    expect(error.category).toBe('usage');
    expect(EXIT_CODES[error.category]).toBe(2);
    expect(new GatewayError('TRUST_KEY_UNREADABLE', 'no key file').category).toBe('config');
    // @ts-expect-error an unregistered code does not compile
    expect(new GatewayError('NOT_A_REGISTERED_CODE', 'x').code).toBe('NOT_A_REGISTERED_CODE');
  });
});
