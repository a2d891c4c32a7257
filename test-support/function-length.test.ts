/**
 * docs/development.md: no source function runs past 150 lines. An area's closure grows by accretion (one more
 * concern inside `create…`), and past a screen or three nobody reads it whole; the fix is a module per concern
 * that returns what it serves and how to close it (docs/architecture.md). Counted with the TypeScript parser over
 * every source file of the packages (tests excluded): a function's lines run from its first to its last, nested
 * functions included.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from './cli.js';

const MAX_FUNCTION_LINES = 150;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.contract.ts') ? [path] : [];
  });
}

interface FunctionSpan {
  where: string;
  lines: number;
}

/** Every function-like node of a file with its length in lines. */
function functionSpans(path: string, text = readFileSync(path, 'utf8')): FunctionSpan[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const spans: FunctionSpan[] = [];
  const nameOf = (node: ts.Node): string => {
    const named = node as ts.Node & { name?: ts.Node };
    if (named.name && ts.isIdentifier(named.name)) return named.name.text;
    if (ts.isVariableDeclaration(node.parent) && ts.isIdentifier(node.parent.name)) return node.parent.name.text;
    if (ts.isPropertyAssignment(node.parent) && ts.isIdentifier(node.parent.name)) return node.parent.name.text;
    return '(anonymous)';
  };
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ where: `${relative(repositoryRoot, path)}:${start + 1} ${nameOf(node)}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return spans;
}

describe('function length', () => {
  it('counts a function from its first line to its last (the measure can fail)', () => {
    const body = Array.from({ length: MAX_FUNCTION_LINES }, (_, index) => `  const v${index} = ${index};`).join('\n');
    const spans = functionSpans('long.ts', `export function long() {\n${body}\n}\nconst short = () => 1;\n`);
    expect(spans.map((span) => [span.where.split(' ')[1], span.lines])).toEqual([
      ['long', MAX_FUNCTION_LINES + 2],
      ['short', 1],
    ]);
  });

  it(`no source function of core, runtime, server or cli runs past ${MAX_FUNCTION_LINES} lines`, () => {
    const long = ['core', 'runtime', 'server', 'cli']
      .flatMap((name) => sourceFiles(join(repositoryRoot, 'packages', name, 'src')))
      .flatMap((path) => functionSpans(path))
      .filter((span) => span.lines > MAX_FUNCTION_LINES)
      .map((span) => `${span.where}: ${span.lines} lines`);
    expect(long).toEqual([]);
  });
});
