import { lookup } from 'node:dns/promises';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import {
  canonicalMcpUrl,
  isGatewayError,
  isLoopbackHostname,
  loadTrustedKeys,
  verifyLockFile,
  type LoadedConfig,
  type ErrorCode,
  type Lockfile,
  type TrustedKey,
  type VerificationReport,
} from '@gateway/core';
import { classifyAddress, isAddressAllowed } from './network/addresses.js';
import { defaultListen, LISTEN_ADDRESS_FIX, listenAddressText, parseListen, probeListenAddress } from './network/listen-address.js';
import { PeopleDirectory } from './people/directory.js';
import { peopleFilePath } from './paths.js';
import { createVault, referencedSecretNames } from './vault/index.js';
import type { Vault } from './vault/vault.js';

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * `gateway doctor`: what `gateway serve` needs and what is missing, each with the command that fixes it.
 * `error` findings stop serve or make it useless (nobody can sign in, calls fail); `warning` ones leave
 * part of the product unusable (the admin API); `ok` ones say what was checked.
 */
export type FindingLevel = 'ok' | 'warning' | 'error';

export interface DoctorFinding {
  /**
   * A stable name of the check: `url`, `listen`, `lock`, `trust`, `publications`, `vault`, `secret`, `admin-token`,
   * `sign-in`, `network`, `mcp`, `storage`.
   */
  check: string;
  level: FindingLevel;
  /** The registered error code of what was found, where one names it (`DATABASE_UNREACHABLE`, …). */
  code?: ErrorCode;
  /** What was found, one sentence. */
  message: string;
  /** The command (or edit) that fixes it, when something is missing. */
  fix?: string;
}

export interface DoctorReport {
  /** True when nothing stops `gateway serve` from serving tools to a person's client. */
  ok: boolean;
  findings: DoctorFinding[];
}

export interface DiagnoseOptions {
  lockPath: string;
  /** Environment for the vault providers (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Resolves an upstream host name to addresses (default: the system resolver); tests pass their own. */
  resolveHost?: (hostname: string) => Promise<string[]>;
  /**
   * Checks the storage `gateway serve` would use (`storage.kind: postgres`: the connection string in the vault, the
   * connection, the migrations), given the opened vault. The server package owns storage, so the CLI passes its
   * check in; without one, `storage` is not checked.
   */
  checkStorage?: (loaded: LoadedConfig, vault: Vault) => Promise<DoctorFinding[]>;
}

async function systemResolve(hostname: string): Promise<string[]> {
  const addresses = await lookup(hostname, { all: true });
  return addresses.map((entry) => entry.address);
}

export const NOBODY_CAN_SIGN_IN = 'nobody can sign in to approve a client: there is no local person and no OIDC provider';

/** How people can sign in (`2 local people`, `OIDC https://…`); empty when nobody can, so no client can ever be approved. */
export async function signInMethods(loaded: LoadedConfig): Promise<string[]> {
  const auth = loaded.config.auth ?? {};
  const isLocalOn = auth.local?.enabled !== false;
  const people = isLocalOn ? await new PeopleDirectory(peopleFilePath(loaded)).list().catch(() => []) : [];
  const methods: string[] = [];
  if (people.length > 0) methods.push(`${people.length} local ${people.length === 1 ? 'person' : 'people'}`);
  if (auth.oidc) methods.push(`OIDC ${auth.oidc.issuer}`);
  return methods;
}

/** Checks everything `gateway serve` depends on, in the order a newcomer sets it up. Never throws for a missing piece. */
export async function diagnose(loaded: LoadedConfig, options: DiagnoseOptions): Promise<DoctorReport> {
  const findings: DoctorFinding[] = [];
  const add = (finding: DoctorFinding) => findings.push(finding);

  // 1. The gateway's own URL: https outside loopback.
  const gatewayUrl = new URL(loaded.config.gateway.url);
  if (gatewayUrl.protocol !== 'https:' && !isLoopbackHostname(gatewayUrl.hostname)) {
    add({
      check: 'url',
      level: 'error',
      message: `gateway.url ${gatewayUrl.href} is plain http on a non-loopback host; clients and browsers need https`,
      fix: 'set gateway.url to an https URL and gateway.tls.{cert,key} (or put the gateway behind a TLS proxy)',
    });
  } else {
    add({ check: 'url', level: 'ok', message: `clients connect to ${canonicalMcpUrl(loaded.config)}` });
  }

  // 1b. The listen address (gateway.listen, else derived from gateway.url, as serve chooses it) is free.
  await checkListenAddress(loaded, add);

  // 2. Trusted keys and the lock: serve loads only publications signed by a key under trust.keys.
  const trusted: TrustedKey[] | Error = await loadTrustedKeys(loaded).catch((error: unknown) => asError(error));
  if (trusted instanceof Error || (Array.isArray(trusted) && trusted.length === 0)) {
    add({
      check: 'trust',
      level: 'error',
      message:
        trusted instanceof Error
          ? `trust.keys cannot be read: ${trusted.message}`
          : 'trust.keys lists no public key, so no publication can be trusted',
      fix: 'gateway keys generate --out keys --name publisher   # then list ./keys/publisher.pub.jwk under trust.keys in gateway.yaml',
    });
  } else {
    add({ check: 'trust', level: 'ok', message: `${trusted.length} trusted publishing key${trusted.length === 1 ? '' : 's'}` });
  }

  let report: VerificationReport | undefined;
  let lock: Lockfile | null = null;
  try {
    ({ report, lock } = await verifyLockFile(options.lockPath, loaded, Array.isArray(trusted) ? trusted : []));
  } catch (error) {
    add({
      check: 'lock',
      level: 'error',
      message: isGatewayError(error) ? error.message : `cannot read the lock: ${(error as Error).message}`,
      fix: 'gateway import <source>   # then gateway review <source> and gateway publish <source> --key <private key>',
    });
  }
  if (report && !report.ok) {
    const first = report.problems[0]!;
    add({
      check: 'lock',
      level: 'error',
      message:
        `tools.lock does not verify (${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}; ` +
        `first: ${first.code}: ${first.message})`,
      fix: 'gateway verify   # lists every problem; fix with gateway import, review and publish, never by hand',
    });
  } else if (report) {
    add({ check: 'lock', level: 'ok', message: 'tools.lock verifies against gateway.yaml and trust.keys' });
  }
  if (report) {
    for (const source of report.sources) {
      if (source.inUse === null) {
        add({
          check: 'publications',
          level: 'error',
          message: `source ${source.name} has nothing in use: its tools are not served`,
          fix: `gateway review ${source.name}   # choose tools, then: gateway publish ${source.name} --key <private key>`,
        });
      } else {
        add({ check: 'publications', level: 'ok', message: `source ${source.name}: ${source.inUse} in use, ${source.toolCount} tools` });
      }
    }
  }

  // 3. The vault and every secret the configuration names; then the storage serve would use.
  await checkVaultAndSecrets(loaded, options, add);

  // 4. Somebody must be able to sign in to approve access.
  const signIn = await signInMethods(loaded);
  if (signIn.length === 0) {
    add({
      check: 'sign-in',
      level: 'error',
      message: NOBODY_CAN_SIGN_IN,
      fix: 'printf "%s" "$PASSWORD" | gateway people add <name>   # or configure auth.oidc',
    });
  } else {
    add({ check: 'sign-in', level: 'ok', message: `sign-in through ${signIn.join(' and ')}` });
  }

  // 5. Upstreams on loopback or private addresses are refused by the SSRF guard unless allowed.
  if (report?.ok) await checkUpstreamAddresses(loaded, lock, options, add);

  // 6. MCP sources: a stdio server's command must exist; an endpoint's address must pass the SSRF guard.
  await checkMcpSources(loaded, options.env ?? process.env, options.resolveHost ?? systemResolve, add);

  return { ok: !findings.some((finding) => finding.level === 'error'), findings };
}

/** The vault opens, every secret the configuration names is in it, and (PostgreSQL) the storage is reachable and migrated. */
async function checkVaultAndSecrets(loaded: LoadedConfig, options: DiagnoseOptions, add: (finding: DoctorFinding) => void): Promise<void> {
  const vault: Vault | Error = await createVault(loaded, options.env ? { env: options.env } : {}).catch((error: unknown) => asError(error));
  if (vault instanceof Error) {
    add({
      check: 'vault',
      level: 'error',
      ...(isGatewayError(vault) ? { code: vault.code } : {}),
      message: `the vault cannot be opened: ${vault.message}`,
      fix: 'see docs/vault.md (the file vault needs its key file or GATEWAY_VAULT_KEY; the postgres vault its url and key settings)',
    });
    return;
  }
  try {
    await checkOpenedVault(loaded, vault, options, add);
  } finally {
    await vault.close?.().catch(() => undefined);
  }
}

async function checkOpenedVault(
  loaded: LoadedConfig,
  vault: Vault,
  options: DiagnoseOptions,
  add: (finding: DoctorFinding) => void,
): Promise<void> {
  // The postgres vault: every stored value is under a configured key.
  const checked = vault.check ? await vault.check().catch((error: unknown) => asError(error)) : undefined;
  if (checked instanceof Error) {
    add({
      check: 'vault',
      level: 'error',
      ...(isGatewayError(checked) ? { code: checked.code } : {}),
      message: checked.message,
      fix: 'see docs/vault.md ("Rotating the key-encryption key")',
    });
  } else {
    add({ check: 'vault', level: 'ok', message: `vault provider ${vault.provider}${checked ? `: ${checked}` : ''}` });
  }
  const adminName = loaded.config.admin?.tokenSecret ?? 'admin-token';
  const storageUrlName = loaded.config.storage?.kind === 'postgres' ? loaded.config.storage.url : undefined;
  // The storage check reports the connection string's secret itself, with what it means for serve.
  for (const name of referencedSecretNames(loaded).filter((name) => name !== storageUrlName || !options.checkStorage)) {
    const value = await vault.get(name).catch((error: unknown) => asError(error));
    const isAdmin = name === adminName;
    if (value instanceof Error) {
      // The secret is there but does not open (a wrong key, an altered row), or the vault did not answer.
      add({
        check: isAdmin ? 'admin-token' : 'secret',
        level: 'error',
        ...(isGatewayError(value) ? { code: value.code } : {}),
        message: `the secret '${name}' cannot be read: ${value.message}`,
        fix: 'see docs/vault.md',
      });
    } else if (value === undefined) {
      add({
        check: isAdmin ? 'admin-token' : 'secret',
        // Without the admin token serve still serves tools; without a credential's secret its calls fail.
        level: isAdmin ? 'warning' : 'error',
        message: isAdmin
          ? `no admin token '${name}' in the vault: gateway status, sessions and receipts cannot reach the server`
          : `the vault has no secret '${name}', which a credential or an MCP server's env in gateway.yaml names: calls that need it fail`,
        fix: isAdmin ? `openssl rand -hex 32 | gateway secrets set ${name}` : `gateway secrets set ${name} < value.txt`,
      });
    } else {
      add({ check: isAdmin ? 'admin-token' : 'secret', level: 'ok', message: `secret '${name}' is in the vault` });
    }
  }
  // 3b. The storage serve would use (PostgreSQL: reachable, migrated).
  if (options.checkStorage) for (const finding of await options.checkStorage(loaded, vault)) add(finding);
}

/** Each in-use server's address passes the SSRF guard (or is allowed by network.allowPrivateNetworks). */
async function checkUpstreamAddresses(
  loaded: LoadedConfig,
  lock: Lockfile | null,
  options: DiagnoseOptions,
  add: (finding: DoctorFinding) => void,
): Promise<void> {
  const allowList = loaded.config.network?.allowPrivateNetworks ?? [];
  const resolveHost = options.resolveHost ?? systemResolve;
  const servers = new Set<string>();
  for (const source of lock?.sources ?? []) {
    for (const publication of source.publications) {
      if (publication.status !== 'in use') continue;
      for (const operation of publication.operations)
        if (operation.selected && 'server' in operation && operation.server) servers.add(operation.server);
    }
  }
  for (const server of [...servers].sort()) {
    const { refused } = await guardedAddresses(new URL(server), allowList, resolveHost);
    if (refused.length > 0) {
      add({
        check: 'network',
        level: 'error',
        message: `upstream ${server} is on a ${classifyAddress(refused[0]!)} address (${refused[0]}), which the SSRF guard refuses`,
        fix: allowListFix(refused[0]!),
      });
    }
  }
}

/** The addresses a URL's host resolves to (or is), and those the SSRF guard would refuse. */
/** Whether `gateway serve` could listen where it would (a port held by another process stops it at start). */
async function checkListenAddress(loaded: LoadedConfig, add: (finding: DoctorFinding) => void): Promise<void> {
  const configured = loaded.config.gateway.listen;
  let listen: { host: string; port: number };
  try {
    listen = parseListen(configured ?? defaultListen(loaded.config.gateway.url));
  } catch (error) {
    add({ check: 'listen', level: 'error', message: asError(error).message, fix: 'set gateway.listen to host:port, e.g. 127.0.0.1:8080' });
    return;
  }
  const address = listenAddressText(listen);
  const problem = await probeListenAddress(listen);
  if (problem) {
    add({
      check: 'listen',
      level: 'error',
      message: `cannot listen on ${address}: ${problem}`,
      fix: `${LISTEN_ADDRESS_FIX}${configured ? '' : ' (serve listens where gateway.url points on loopback, else 127.0.0.1:8080)'}`,
    });
  } else {
    add({ check: 'listen', level: 'ok', message: `${address} is free to listen on` });
  }
}

async function guardedAddresses(
  url: URL,
  allowList: readonly string[],
  resolveHost: (hostname: string) => Promise<string[]>,
): Promise<{ addresses: string[]; refused: string[] }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolveHost(host).catch(() => []);
  return { addresses, refused: addresses.filter((address) => !isAddressAllowed(address, allowList)) };
}

/** The gateway.yaml line that lets the guard through to one address. */
function allowListFix(address: string): string {
  const range = `${address}/${address.includes(':') ? 128 : 32}`;
  return `add it under network.allowPrivateNetworks in gateway.yaml, e.g. allowPrivateNetworks: ["${range}"]`;
}

/** True when `file` is an executable regular file. */
async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where a stdio server's command would be found, as spawn finds it: a name with a slash is a path (relative
 * to gateway.yaml's directory, the server's working directory); a bare name is looked up on PATH.
 */
async function findCommand(command: string, directory: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (command.includes('/') || command.includes('\\')) {
    const path = isAbsolute(command) ? command : resolvePath(directory, command);
    return (await isExecutableFile(path)) ? path : undefined;
  }
  for (const entry of (env.PATH ?? process.env.PATH ?? '').split(delimiter)) {
    if (entry && (await isExecutableFile(join(entry, command)))) return join(entry, command);
  }
  return undefined;
}

async function checkMcpSources(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv,
  resolveHost: (hostname: string) => Promise<string[]>,
  add: (finding: DoctorFinding) => void,
): Promise<void> {
  const allowList = loaded.config.network?.allowPrivateNetworks ?? [];
  for (const [name, source] of Object.entries(loaded.config.sources).sort(([a], [b]) => a.localeCompare(b))) {
    if (source.kind !== 'mcp') continue;
    if (source.command) {
      const command = source.command[0]!;
      const found = await findCommand(command, loaded.directory, env);
      if (found === undefined) {
        add({
          check: 'mcp',
          level: 'error',
          message:
            `source ${name}: the stdio command '${command}' is not an ` +
            `executable file${command.includes('/') ? '' : ' on PATH'}: the server cannot be started`,
          fix: `install it, or fix sources.${name}.command in gateway.yaml (relative paths resolve against gateway.yaml's directory)`,
        });
      } else {
        add({ check: 'mcp', level: 'ok', message: `source ${name}: stdio command ${found}` });
      }
      continue;
    }
    const url = new URL(source.url!);
    const { addresses, refused } = await guardedAddresses(url, allowList, resolveHost);
    if (refused.length > 0) {
      add({
        check: 'network',
        level: 'error',
        message:
          `MCP source ${name} (${url.href}) is on a ${classifyAddress(refused[0]!)} address (${refused[0]}), which the SSRF guard ` +
          `refuses`,
        fix: allowListFix(refused[0]!),
      });
    } else if (addresses.length === 0) {
      add({
        check: 'mcp',
        level: 'warning',
        message: `source ${name}: ${url.hostname} does not resolve from here`,
        fix: `check sources.${name}.url in gateway.yaml`,
      });
    } else {
      add({ check: 'mcp', level: 'ok', message: `source ${name}: ${url.href} resolves to an allowed address` });
    }
    for (const file of source.caCertificates ?? []) {
      const path = resolvePath(loaded.directory, file);
      if (
        !(await stat(path)
          .then((entry) => entry.isFile())
          .catch(() => false))
      ) {
        add({
          check: 'mcp',
          level: 'error',
          message: `source ${name}: caCertificates file ${path} does not exist`,
          fix: `put the CA's PEM file there or fix sources.${name}.caCertificates`,
        });
      }
    }
  }
}
