/**
 * The package and folder boundaries of docs/development.md, checked over the import statements of the source
 * (test files excluded): the CLI reaches the server only through its public entry point and only to serve; core
 * stays free of frameworks, databases and network or process I/O; no folder of packages/server/src imports back
 * into a folder that imports it.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from './cli.js';

interface ImportStatement {
  file: string;
  specifier: string;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

/** Static imports, re-exports and dynamic `import('…')` of every source file under `directory`. */
function importsUnder(directory: string): ImportStatement[] {
  const pattern =
    /(?:^|[\s;])(?:import|export)\s(?:type\s)?[^'";]*?from\s*'([^']+)'|(?:^|[\s;])import\s*'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g;
  return sourceFiles(directory).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(pattern)].map((match) => ({ file, specifier: (match[1] ?? match[2] ?? match[3])! })),
  );
}

const packages = (name: string): string => join(repositoryRoot, 'packages', name, 'src');
const shown = (statement: ImportStatement): string => `${relative(repositoryRoot, statement.file)} imports '${statement.specifier}'`;

/** The folder cycles among the server's folders, as `a → b → … → a` (each reported once, from its smallest folder). */
function folderCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const cycles = new Set<string>();
  const visit = (start: string, current: string, path: string[]): void => {
    for (const next of edges.get(current) ?? []) {
      if (next === start) {
        const smallest = [...path].sort()[0]!;
        const at = path.indexOf(smallest);
        const rotated = [...path.slice(at), ...path.slice(0, at)];
        cycles.add([...rotated, smallest].join(' → '));
      } else if (!path.includes(next) && next > start) {
        visit(start, next, [...path, next]);
      }
    }
  };
  for (const folder of [...edges.keys()].sort()) visit(folder, folder, [folder]);
  return [...cycles].sort();
}

function serverFolderGraph(): Map<string, Set<string>> {
  const root = packages('server');
  const folderOf = (path: string): string => relative(root, dirname(path)) || '.';
  const edges = new Map<string, Set<string>>();
  for (const statement of importsUnder(root)) {
    if (!statement.specifier.startsWith('.')) continue;
    const from = folderOf(statement.file);
    const to = folderOf(resolve(dirname(statement.file), statement.specifier));
    if (from === to || from === '.' || to === '.') continue;
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from)!.add(to);
  }
  return edges;
}

/** Modules core must never import: frameworks, databases, and network or process I/O (it reads files only). */
const FORBIDDEN_IN_CORE = [
  /^fastify($|\/)/,
  /^@fastify\//,
  /^better-sqlite3$/,
  /^undici($|\/)/,
  /^commander$/,
  /^pino($|\/)/,
  /^@modelcontextprotocol\//,
  /^@gateway\/(runtime|server|cli)$/,
  /^(node:)?(http|https|http2|net|tls|dgram|dns|child_process|cluster|worker_threads)(\/|$)/,
];

describe('package boundaries', () => {
  it('the CLI imports @gateway/server only in the serve command, and never a server file by path', () => {
    const offending = importsUnder(packages('cli')).filter((statement) => {
      const isServer = statement.specifier === '@gateway/server' || statement.specifier.startsWith('@gateway/server/');
      const isServePackageImport = statement.specifier === '@gateway/server' && statement.file.endsWith(join('commands', 'serve.ts'));
      const reachesIntoServer = /packages\/server\/|(^|\/)server\/(src|dist)\//.test(statement.specifier);
      return (isServer && !isServePackageImport) || reachesIntoServer;
    });
    expect(offending.map(shown)).toEqual([]);
  });

  it('core imports no framework, database, network or process module', () => {
    const offending = importsUnder(packages('core')).filter((statement) =>
      FORBIDDEN_IN_CORE.some((pattern) => pattern.test(statement.specifier)),
    );
    expect(offending.map(shown)).toEqual([]);
  });

  it('the runtime package never imports the server or the CLI', () => {
    const offending = importsUnder(packages('runtime')).filter((statement) =>
      /^@gateway\/(server|cli)$|packages\/(server|cli)\//.test(statement.specifier),
    );
    expect(offending.map(shown)).toEqual([]);
  });
});

describe('folder cycles in packages/server/src', () => {
  it('no folder imports back into a folder that imports it', () => {
    expect(folderCycles(serverFolderGraph())).toEqual([]);
  });

  it('the cycle finder reports a cycle through any number of folders, once', () => {
    const edges = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a', 'd'])],
      ['d', new Set<string>()],
    ]);
    expect(folderCycles(edges)).toEqual(['a → b → c → a']);
    expect(
      folderCycles(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set<string>()],
        ]),
      ),
    ).toEqual([]);
  });
});
