import type { Command } from 'commander';
import { GatewayError, loadConfig } from '@gateway/core';
import { createVault, type SecretMetadata, type Vault } from '@gateway/runtime';
import { contextFrom, printResult, type CliContext } from '../context.js';
import { readHiddenLines } from '../terminal.js';

export function registerSecrets(program: Command): void {
  const secrets = program
    .command('secrets')
    .description('store, rotate, list and delete secrets in the vault (values are read from stdin, never printed)')
    .addHelpText(
      'after',
      '\nThe vault is chosen by vault.provider in gateway.yaml (docs/vault.md). The embedded `file` provider\n' +
        'keeps AES-256-GCM ciphertexts in <dataDirectory>/vault.json, with its key in GATEWAY_VAULT_KEY or a\n' +
        '0600 key file created on the first `set`. `postgres` keeps envelope-encrypted values in a database of its\n' +
        'own, shared by replicas. `env` and `exec` providers are read-only.\n' +
        '\nExamples:\n' +
        '  printf %s "$TOKEN" | gateway secrets set orders-api-key\n' +
        '  gateway secrets set admin-token            (type the value; it is not echoed)\n' +
        '  gateway secrets rotate orders-api-key < new-key.txt\n' +
        '  gateway secrets list --json\n' +
        '  gateway secrets delete old-key',
    );

  secrets
    .command('set')
    .description('store a secret (creates it or replaces its value); the value is read from stdin')
    .addHelpText(
      'after',
      '\nExamples:\n  gateway secrets set orders-api-key < key.txt\n  printf "%s" "$TOKEN" | gateway secrets set tracker-token',
    )
    .argument('<name>', 'the secret name, as gateway.yaml refers to it')
    .action(async (name: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      await withVault(context, async (vault) => {
        const value = await readSecretValue(name);
        const metadata = await vault.set(name, value);
        printResult(context, `stored ${name} (version ${metadata.version})`, { stored: metadata });
      });
    });

  secrets
    .command('rotate')
    .description('replace the value of an existing secret (read from stdin); the next upstream call uses it')
    .addHelpText('after', '\nExamples:\n  gateway secrets rotate orders-api-key < new-key.txt')
    .argument('<name>', 'the secret name')
    .action(async (name: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      await withVault(context, async (vault) => {
        await requireExisting(vault, name);
        const value = await readSecretValue(name);
        const metadata = await vault.set(name, value);
        printResult(context, `rotated ${name} (version ${metadata.version})`, { rotated: metadata });
      });
    });

  secrets
    .command('list')
    .description('list secret names and metadata (never values)')
    .addHelpText('after', '\nExamples:\n  gateway secrets list\n  gateway secrets list --json')
    .action(async (_options: unknown, command: Command) => {
      const context = contextFrom(command);
      await withVault(context, async (vault) => {
        const entries = await vault.list();
        printResult(context, describeList(vault.provider, entries), { provider: vault.provider, secrets: entries });
      });
    });

  secrets
    .command('delete')
    .description('delete a secret')
    .addHelpText('after', '\nExamples:\n  gateway secrets delete old-api-key')
    .argument('<name>', 'the secret name')
    .action(async (name: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      await withVault(context, async (vault) => {
        if (!(await vault.delete(name))) throw notFound(name);
        printResult(context, `deleted ${name}`, { deleted: name });
      });
    });
}

/** Runs `work` on the configured vault, then closes it (the `postgres` provider's connections). */
async function withVault(context: CliContext, work: (vault: Vault) => Promise<void>): Promise<void> {
  const vault = await createVault(await loadConfig(context.configPath));
  try {
    await work(vault);
  } finally {
    await vault.close?.();
  }
}

async function requireExisting(vault: Vault, name: string): Promise<void> {
  if (!(await vault.list()).some((entry) => entry.name === name)) throw notFound(name);
}

function notFound(name: string): GatewayError {
  return new GatewayError('VAULT_SECRET_NOT_FOUND', `the vault holds no secret named '${name}' (see \`gateway secrets list\`)`);
}

function describeList(provider: string, entries: SecretMetadata[]): string[] {
  if (entries.length === 0) return [`no secrets in the ${provider} vault`];
  const rows = [
    ['NAME', 'VERSION', 'CREATED', 'UPDATED'],
    ...entries.map((entry) => [entry.name, String(entry.version), entry.createdAt || '-', entry.updatedAt || '-']),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * The secret value from stdin. On a terminal it is typed without echo (raw mode, nothing written back);
 * piped input is read to the end. One trailing newline (what `echo` and editors add) is removed.
 */
async function readSecretValue(name: string): Promise<string> {
  const stdin = process.stdin;
  const raw = stdin.isTTY ? (await readHiddenLines([`value for ${name} (not echoed): `], 'SECRET_VALUE_EMPTY'))[0]! : await readAll(stdin);
  const value = raw.replace(/\r?\n$/, '');
  if (value.length === 0) {
    throw new GatewayError(
      'SECRET_VALUE_EMPTY',
      `no value for ${name} on stdin; pipe it in, e.g. printf %s "$VALUE" | gateway secrets set ${name}`,
    );
  }
  return value;
}

async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
