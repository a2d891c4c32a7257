#!/usr/bin/env node
// `pnpm pack:cli`: the `gateway` CLI as one npm package that installs on a fresh machine from a tarball
// (`npm install --global ./governed-tool-gateway-<version>.tgz`), outside this repository.
//
// The workspace packages (@gateway/core, runtime, server, cli) are private and never published: they are
// bundled into one file with esbuild. Third-party packages stay ordinary, exactly pinned dependencies (npm
// installs them, better-sqlite3 compiles as usual). Output: .tmp/pack/governed-tool-gateway-<version>.tgz
// (its path is the last line printed).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const PACKAGE_NAME = 'governed-tool-gateway';
const root = fileURLToPath(new URL('..', import.meta.url));
const workspacePackages = ['core', 'runtime', 'server', 'cli'];
const readJson = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));

// 1. Build the workspace (tsc -b), as `pnpm build` does.
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-b', ...workspacePackages.map((name) => `packages/${name}`)], {
  cwd: root,
  stdio: 'inherit',
});

// 2. The union of the workspace's third-party dependencies; two different pins of one package is a bug to fix first.
const dependencies = {};
for (const name of workspacePackages) {
  for (const [dependency, version] of Object.entries(readJson(`packages/${name}/package.json`).dependencies ?? {})) {
    if (dependency.startsWith('@gateway/')) continue;
    if (dependencies[dependency] && dependencies[dependency] !== version) {
      throw new Error(`${dependency} is pinned to both ${dependencies[dependency]} and ${version}: pin one version across packages`);
    }
    dependencies[dependency] = version;
  }
}

// 3. One ESM file: workspace code inlined, every other import left to node_modules.
const outDirectory = join(root, '.tmp', 'pack', PACKAGE_NAME);
rmSync(outDirectory, { recursive: true, force: true });
mkdirSync(join(outDirectory, 'dist'), { recursive: true });
await build({
  entryPoints: [join(root, 'packages/cli/dist/main.js')],
  outfile: join(outDirectory, 'dist', 'gateway.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  logLevel: 'warning',
  plugins: [
    {
      name: 'third-party-external',
      setup(builder) {
        // Bare specifiers that are not workspace packages resolve from the installed package's node_modules.
        builder.onResolve({ filter: /^[^./]/ }, (args) =>
          args.path.startsWith('@gateway/') ? undefined : { path: args.path, external: true },
        );
      },
    },
  ],
});

// 4. package.json, the package's own README (for people who installed it: packages/cli/README.md), the docs/
// it and the CLI's messages name, LICENSE (when present).
const rootPackage = readJson('package.json');
const cliPackage = readJson('packages/cli/package.json');
const manifest = {
  name: PACKAGE_NAME,
  version: rootPackage.version,
  description:
    'The `gateway` CLI and server of the governed tool gateway: OpenAPI and MCP tools behind one MCP address, reviewed in git, ' +
    'approved by a person.',
  type: 'module',
  bin: { gateway: 'dist/gateway.js' },
  files: ['dist', 'docs', 'README.md'],
  engines: rootPackage.engines,
  dependencies: Object.fromEntries(Object.entries(dependencies).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))),
};
if (cliPackage.license ?? rootPackage.license) manifest.license = cliPackage.license ?? rootPackage.license;
writeFileSync(join(outDirectory, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
copyFileSync(join(root, 'packages/cli/README.md'), join(outDirectory, 'README.md'));
copyDocs(join(root, 'docs'), join(outDirectory, 'docs'));

/**
 * Copies docs/ (Markdown, the config schema, images). A relative link to a file of the repository the package
 * does not ship (source code, say) would not resolve in an installed package: it becomes plain text naming the
 * repository path, so every relative link in the package resolves (packages/cli/test/pack-install.e2e.test.ts).
 */
function copyDocs(from, to) {
  mkdirSync(to, { recursive: true });
  const shipped = readdirSync(from).filter((name) => /\.(md|json|png)$/.test(name));
  for (const name of shipped) copyFileSync(join(from, name), join(to, name));
  for (const name of shipped.filter((each) => each.endsWith('.md'))) {
    const text = readFileSync(join(to, name), 'utf8');
    const rewritten = text.replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, (link, label, target) => {
      if (/^([a-z][a-z0-9+.-]*:|#)/i.test(target)) return link;
      const file = target.split('#')[0];
      if (existsSync(resolvePath(to, file))) return link;
      const inRepository = relative(root, resolvePath(from, file));
      const where = label.replaceAll('`', '') === inRepository ? '' : `\`${inRepository}\` `;
      return `${label} (${where}in the gateway's source repository)`;
    });
    if (rewritten !== text) writeFileSync(join(to, name), rewritten);
  }
}

// 5. The tarball (npm pack: the folder is a plain package, outside the pnpm workspace).
const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', join(root, '.tmp', 'pack')], {
  cwd: outDirectory,
  encoding: 'utf8',
  env: { ...process.env, npm_config_loglevel: 'error' },
})
  .trim()
  .split('\n')
  .at(-1);
console.log(join(root, '.tmp', 'pack', packed));
