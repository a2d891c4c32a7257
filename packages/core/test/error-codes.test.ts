import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../../test-support/cli.js';

// Upper-snake literals in the source that are not error codes of ours.
const NOT_ERROR_CODES = new Set([
  'GATEWAY_PUBLISH_KEY', // environment variable names
  'GATEWAY_VAULT_KEY',
  'UND_ERR_BODY_TIMEOUT', // undici's own error codes, mapped to ours
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

describe('error codes', () => {
  it('every code the source can report is documented in docs/errors.md or, for reasons, docs/lockfile.md', () => {
    const documented = readFileSync(join(repositoryRoot, 'docs', 'errors.md'), 'utf8') +
      readFileSync(join(repositoryRoot, 'docs', 'lockfile.md'), 'utf8');
    const codes = new Set<string>();
    for (const packageName of ['core', 'cli', 'server']) {
      for (const file of sourceFiles(join(repositoryRoot, 'packages', packageName, 'src'))) {
        for (const match of readFileSync(file, 'utf8').matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) {
          if (!NOT_ERROR_CODES.has(match[1]!)) codes.add(match[1]!);
        }
      }
    }
    expect(codes.size).toBeGreaterThan(50);
    const undocumented = [...codes].filter((code) => !documented.includes(`\`${code}\``)).sort();
    expect(undocumented).toEqual([]);
  });
});
