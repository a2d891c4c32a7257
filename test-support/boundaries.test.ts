/**
 * The package and folder boundaries of docs/development.md, checked over the import statements of the source
 * (test files excluded): the CLI reaches the server only through its public entry point and only to serve (and for
 * doctor's storage check); core
 * stays free of frameworks, databases and network or process I/O; no folder of packages/server/src imports back
 * into a folder that imports it; no file of core, runtime, server or cli imports itself back through any chain of
 * imports (type-only imports included: a type cycle is still two modules that cannot be read apart).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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
  it('the CLI imports @gateway/server only in the serve command (and doctor, for the storage), never a server file by path', () => {
    const offending = importsUnder(packages('cli')).filter((statement) => {
      const isServer = statement.specifier === '@gateway/server' || statement.specifier.startsWith('@gateway/server/');
      const isServePackageImport =
        statement.specifier === '@gateway/server' &&
        (statement.file.endsWith(join('commands', 'serve.ts')) || statement.file.endsWith(join('commands', 'doctor.ts')));
      const reachesIntoServer = /packages\/server\/|(^|\/)server\/(src|dist)\//.test(statement.specifier);
      return (isServer && !isServePackageImport) || reachesIntoServer;
    });
    expect(offending.map(shown)).toEqual([]);
  });

  it('the CLI declares no admin API answer type: each admin request reads a type of @gateway/core', () => {
    const files = sourceFiles(packages('cli')).map((file) => ({ file, text: readFileSync(file, 'utf8') }));
    const declaration = /^\s*(?:export\s+)?(?:interface\s+([A-Z]\w*)|type\s+([A-Z]\w*)[^=;]*=)/gm;
    const declared = new Set(files.flatMap(({ text }) => [...text.matchAll(declaration)].map((match) => (match[1] ?? match[2])!)));
    const offending = files.flatMap(({ file, text }) =>
      [...text.matchAll(/\b(?:request|adminRequest)<\s*(\{|[A-Z]\w*)/g)]
        .filter((match) => match[1] === '{' || declared.has(match[1]!))
        .map((match) => `${relative(repositoryRoot, file)} declares the answer type of '${text.slice(match.index, match.index + 60)}…'`),
    );
    expect(offending).toEqual([]);
  });

  it('core imports no framework, database, network or process module', () => {
    const offending = importsUnder(packages('core')).filter((statement) =>
      FORBIDDEN_IN_CORE.some((pattern) => pattern.test(statement.specifier)),
    );
    expect(offending.map(shown)).toEqual([]);
  });

  it('SQLite is named only in sqlite/ adapter folders: every other source file receives ports', () => {
    const naming = ['core', 'runtime', 'server', 'cli']
      .flatMap((name) => sourceFiles(packages(name)))
      .filter((file) => !file.split(/[\\/]/).includes('sqlite') && !file.endsWith('.contract.ts'))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(repositoryRoot, file));
    expect(naming).toEqual([]);
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

/** The file each relative import of `packages/<name>/src` resolves to (`./x.js` → `x.ts`, `./dir` → `dir/index.ts`). */
function fileGraph(name: string): Map<string, Set<string>> {
  const root = packages(name);
  const edges = new Map<string, Set<string>>(sourceFiles(root).map((file) => [relative(root, file), new Set<string>()]));
  for (const statement of importsUnder(root)) {
    if (!statement.specifier.startsWith('.')) continue;
    let target = resolve(dirname(statement.file), statement.specifier).replace(/\.js$/, '.ts');
    if (!target.endsWith('.ts')) target = existsSync(`${target}.ts`) ? `${target}.ts` : join(target, 'index.ts');
    edges.get(relative(root, statement.file))!.add(relative(root, target));
  }
  return edges;
}

/**
 * The file cycles of an import graph, as `a.ts → b.ts → a.ts`: one per strongly connected group of files (Tarjan),
 * shown as the shortest cycle through its smallest file, so a report names the files to untangle.
 */
function fileCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const groups: string[][] = [];
  const connect = (file: string): void => {
    order.set(file, order.size);
    lowest.set(file, order.get(file)!);
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (!order.has(next)) {
        connect(next);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
      } else if (stack.includes(next)) {
        lowest.set(file, Math.min(lowest.get(file)!, order.get(next)!));
      }
    }
    if (lowest.get(file) !== order.get(file)) return;
    const group = stack.splice(stack.indexOf(file));
    if (group.length > 1 || edges.get(file)?.has(file)) groups.push(group);
  };
  for (const file of [...edges.keys()].sort()) if (!order.has(file)) connect(file);
  return groups
    .map((group) => {
      const start = [...group].sort()[0]!;
      const cameFrom = new Map<string, string>();
      const queue = [start];
      while (queue.length > 0) {
        const current = queue.shift()!;
        const nexts = [...(edges.get(current) ?? [])].filter((next) => group.includes(next)).sort();
        if (nexts.includes(start)) {
          const path = [current];
          while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
          return [...path, start].join(' → ');
        }
        for (const next of nexts) {
          if (cameFrom.has(next) || next === start) continue;
          cameFrom.set(next, current);
          queue.push(next);
        }
      }
      return group.join(' → ');
    })
    .sort();
}

describe('file cycles in core, runtime, server and cli', () => {
  for (const name of ['core', 'runtime', 'server', 'cli']) {
    it(`no file of packages/${name}/src imports itself back through a chain of imports`, () => {
      expect(fileCycles(fileGraph(name))).toEqual([]);
    });
  }

  it('the file cycle finder names the files of each cycle, a self-import included, and passes a tree', () => {
    const edges = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['c.ts', 'd.ts'])],
      ['c.ts', new Set(['a.ts'])],
      ['d.ts', new Set(['e.ts'])],
      ['e.ts', new Set(['e.ts'])],
    ]);
    expect(fileCycles(edges)).toEqual(['a.ts → b.ts → c.ts → a.ts', 'e.ts → e.ts']);
    expect(
      fileCycles(
        new Map([
          ['a.ts', new Set(['b.ts'])],
          ['b.ts', new Set<string>()],
        ]),
      ),
    ).toEqual([]);
  });
});

/**
 * Every file the line-width rule covers: the TypeScript of packages/ (build output and dependencies excluded), the
 * scripts of bench/ and scripts/, and everything in test-support/.
 */
function filesUnder(directory: string, keep: (path: string) => boolean): string[] {
  return readdirSync(directory).flatMap((entry) => {
    if (entry === 'node_modules' || entry === 'dist' || entry.startsWith('.')) return [];
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return filesUnder(path, keep);
    return keep(path) ? [path] : [];
  });
}

const MAX_LINE_LENGTH = 140;

/**
 * Lines allowed to stay longer than MAX_LINE_LENGTH, as `path:line`. Empty on purpose: Biome
 * (lineWidth 140) breaks code, and long strings, comments and templates are split by hand; add a line here only
 * with a comment saying why it cannot be split without changing what it means.
 */
const LONG_LINE_ALLOW_LIST: readonly string[] = [];

/** `path:line (length)` for each line of `text` longer than MAX_LINE_LENGTH characters (UTF-16 units, as Biome counts). */
function longLines(path: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) => (line.length > MAX_LINE_LENGTH ? [`${path}:${index + 1} (${line.length})`] : []));
}

describe('line width', () => {
  it('no source line is longer than 140 characters', () => {
    const files = [
      ...filesUnder(join(repositoryRoot, 'packages'), (path) => path.endsWith('.ts')),
      ...filesUnder(join(repositoryRoot, 'bench'), (path) => path.endsWith('.mjs')),
      ...filesUnder(join(repositoryRoot, 'scripts'), (path) => path.endsWith('.mjs')),
      ...filesUnder(join(repositoryRoot, 'test-support'), () => true),
    ];
    expect(files.length).toBeGreaterThan(200);
    const long = files
      .flatMap((file) => longLines(relative(repositoryRoot, file), readFileSync(file, 'utf8')))
      .filter((found) => !LONG_LINE_ALLOW_LIST.includes(found.slice(0, found.lastIndexOf(' '))));
    expect(long).toEqual([]);
  });

  it('the line-width check finds a line of 141 characters and passes one of 140', () => {
    expect(longLines('sample.ts', `${'a'.repeat(140)}\n${'b'.repeat(141)}\n`)).toEqual(['sample.ts:2 (141)']);
  });
});
