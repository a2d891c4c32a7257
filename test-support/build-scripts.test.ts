/**
 * `pnpm install` prints no "Ignored build scripts" warning: every installed package with an install script is
 * either allowed to run it (`onlyBuiltDependencies`) or known not to need it (`ignoredBuiltDependencies`),
 * and esbuild, whose script is skipped, still works.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from './cli.js';

/** The names listed under `key` in pnpm-workspace.yaml (a block list of plain names). */
function workspaceList(key: string): string[] {
  const text = readFileSync(join(repositoryRoot, 'pnpm-workspace.yaml'), 'utf8');
  const block = new RegExp(`^${key}:\\n((?:[ \\t]+-[^\\n]*\\n?)*)`, 'm').exec(text);
  return block ? [...block[1]!.matchAll(/-\s*([^\s#]+)/g)].map((match) => match[1]!) : [];
}

/** Installed packages (pnpm's virtual store) that run a script when installed, as pnpm decides it. */
function packagesWithInstallScripts(): string[] {
  const store = join(repositoryRoot, 'node_modules', '.pnpm');
  const found = new Set<string>();
  for (const entry of readdirSync(store)) {
    if (entry.startsWith('.') || entry === 'node_modules' || entry === 'lock.yaml') continue;
    // `name@version[_peers]`, a scope written `@scope+name`.
    const name = entry.slice(0, entry.indexOf('@', 1)).replace('+', '/');
    const directory = join(store, entry, 'node_modules', name);
    const manifestPath = join(directory, 'package.json');
    if (!existsSync(manifestPath)) continue;
    const scripts = (JSON.parse(readFileSync(manifestPath, 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    // A binding.gyp without an install script is built with node-gyp by default.
    if (scripts.preinstall || scripts.install || scripts.postinstall || existsSync(join(directory, 'binding.gyp'))) found.add(name);
  }
  return [...found].sort();
}

describe('install scripts', () => {
  it('every package with an install script is either approved or deliberately ignored', () => {
    const decided = new Set([...workspaceList('onlyBuiltDependencies'), ...workspaceList('ignoredBuiltDependencies')]);
    expect(workspaceList('onlyBuiltDependencies')).toContain('better-sqlite3');
    expect(packagesWithInstallScripts().filter((name) => !decided.has(name))).toEqual([]);
  });

  it('esbuild works without its postinstall (its platform binary comes as an ordinary optional dependency)', async () => {
    expect(workspaceList('ignoredBuiltDependencies')).toContain('esbuild');
    const esbuild = await import('esbuild');
    const output = await esbuild.transform('const answer: number = 42;', { loader: 'ts' });
    expect(output.code).toBe('const answer = 42;\n');
  });
});
