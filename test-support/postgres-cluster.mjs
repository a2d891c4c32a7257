/**
 * A throw-away PostgreSQL cluster: Debian's server binaries (`postgresql`, 15), a cluster in a temporary folder,
 * started on a free loopback port with its unix socket in that folder, and removed when stopped. Hosts
 * (127.0.0.1) authenticate with a password (SCRAM), so callers use connection strings as an operator would; the
 * socket trusts the harness itself, which creates databases through `psql`.
 *
 * Plain JavaScript so that both the tests (test-support/postgres.ts, which adds the per-file hooks) and the
 * benches (bench/replicas.mjs) start it; types in postgres-cluster.d.mts.
 *
 * PostgreSQL refuses to run as root (CI runs as root): then the cluster runs as `nobody`, which owns the folder.
 * When the binaries are missing starting FAILS with the command that installs them (no silent skip):
 * `scripts/install-test-prerequisites.sh` installs the `postgresql` package, as `pnpm test` and `.ci/run` do.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The bound on a cluster's start (initdb and pg_ctl each): a slow shared machine, never a hang. */
export const START_TIMEOUT_SECONDS = 60;
/** The superuser the harness creates; its password is per cluster, random. */
const SUPERUSER = 'gateway_test';
/** The unprivileged account a root run starts PostgreSQL as (it exists on every Debian system). */
const UNPRIVILEGED_USER = 'nobody';

/** The folder of Debian's PostgreSQL binaries: PG_BIN, else <root>/15/bin, else the newest version under <root>. */
export function postgresBinaries(root = '/usr/lib/postgresql', env = process.env) {
  const candidates = [env.PG_BIN, join(root, '15', 'bin')];
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((entry) => /^\d+$/.test(entry))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join(root, version, 'bin')));
  }
  const found = candidates.find((folder) => folder !== undefined && existsSync(join(folder, 'initdb')));
  if (!found) {
    throw new Error(
      "PostgreSQL is not installed: these tests need Debian's PostgreSQL server binaries (initdb, pg_ctl in /usr/lib/postgresql/15/bin). " +
        'Install them with `apt-get install -y postgresql` (scripts/install-test-prerequisites.sh does it for `pnpm test` and .ci/run), ' +
        'or point PG_BIN at the folder holding initdb.',
    );
  }
  return found;
}

/** @returns {Promise<number>} */
async function freeLoopbackPort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The cluster's owner: `wrap` prefixes a command so it runs as that owner (`runuser -u nobody --` under root,
 * nothing otherwise); `uid`/`gid` are set only under root.
 */
async function clusterAccount() {
  if (process.getuid?.() !== 0) return { wrap: (command, args) => [command, args], uid: undefined, gid: undefined };
  const { stdout: uid } = await run('id', ['-u', UNPRIVILEGED_USER]);
  const { stdout: gid } = await run('id', ['-g', UNPRIVILEGED_USER]);
  return {
    wrap: (command, args) => ['runuser', ['-u', UNPRIVILEGED_USER, '--', command, ...args]],
    uid: Number(uid.trim()),
    gid: Number(gid.trim()),
  };
}

/**
 * A detached shell that outlives the calling process only to clean up after it: once `watched` is gone without
 * having stopped its cluster (killed at a timeout, Ctrl-C, a crash), it stops the cluster and removes its folder.
 * `stop()` kills the watchdog first.
 */
export function stopWhenGone(watched, [command, args], folder) {
  const quoted = (word) => `'${word.replaceAll("'", "'\\''")}'`;
  const script =
    `while kill -0 ${watched} 2>/dev/null; do sleep 1; done; ` +
    `${[command, ...args].map(quoted).join(' ')} >/dev/null 2>&1; rm -rf ${quoted(folder)}`;
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  child.unref();
  return { kill: () => child.kill('SIGKILL') };
}

/**
 * Starts a throw-away cluster; retries on another port when the chosen one was taken meanwhile (bounded).
 * By default without fsync (tests do not prove durability, and CREATE DATABASE per test stays cheap);
 * `durable: true` keeps PostgreSQL's own defaults (fsync, synchronous_commit, full_page_writes on): what a bench
 * of commits must measure.
 */
export async function startPostgres({ durable = false } = {}) {
  const bin = postgresBinaries();
  const account = await clusterAccount();
  // Under root the cluster's owner must reach the folder: /tmp is open to every user, a TMPDIR may not be.
  const folder = await mkdtemp(join(account.uid === undefined ? tmpdir() : '/tmp', 'gateway-pg-'));
  const data = join(folder, 'data');
  const password = `pw-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;
  const asOwner = async (command, args, timeoutSeconds = START_TIMEOUT_SECONDS) => {
    const [file, argv] = account.wrap(join(bin, command), args);
    return run(file, argv, { cwd: folder, timeout: timeoutSeconds * 1000, env: { ...process.env, LC_ALL: 'C' } });
  };
  try {
    await writeFile(join(folder, 'password'), password, { mode: 0o600 });
    if (account.uid !== undefined && account.gid !== undefined) {
      await chown(folder, account.uid, account.gid);
      await chown(join(folder, 'password'), account.uid, account.gid);
    }
    await chmod(folder, 0o700);
    await asOwner('initdb', [
      '--pgdata',
      data,
      '--username',
      SUPERUSER,
      '--pwfile',
      join(folder, 'password'),
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--no-instructions',
      ...(durable ? [] : ['--no-sync']),
    ]);
    let port = 0;
    for (let attempt = 1; ; attempt += 1) {
      port = await freeLoopbackPort();
      const options = [
        `-p ${port}`,
        `-k ${folder}`,
        '-c listen_addresses=127.0.0.1',
        ...(durable ? [] : ['-c fsync=off -c synchronous_commit=off -c full_page_writes=off']),
      ].join(' ');
      try {
        await asOwner('pg_ctl', [
          '--pgdata',
          data,
          '--log',
          join(folder, 'server.log'),
          '-o',
          options,
          '-w',
          '-t',
          String(START_TIMEOUT_SECONDS),
          'start',
        ]);
        break;
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
    let databases = 0;
    const psql = async (sql, database = 'postgres') => {
      const { stdout } = await asOwner(
        'psql',
        ['-h', folder, '-p', String(port), '-U', SUPERUSER, '-d', database, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql],
        30,
      );
      return stdout.trim();
    };
    const watchdog = stopWhenGone(process.pid, account.wrap(join(bin, 'pg_ctl'), ['--pgdata', data, '-m', 'immediate', 'stop']), folder);
    const url = (name = 'postgres') => `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}`;
    return {
      host: '127.0.0.1',
      port,
      password,
      folder,
      url,
      psql,
      async createDatabase() {
        databases += 1;
        const name = `test_${process.pid}_${databases}`;
        await psql(`CREATE DATABASE ${name}`);
        return url(name);
      },
      async restart() {
        await asOwner('pg_ctl', ['--pgdata', data, '--log', join(folder, 'server.log'), '-m', 'fast', '-w', '-t', '30', 'restart'], 40);
      },
      async stop() {
        watchdog.kill();
        await asOwner('pg_ctl', ['--pgdata', data, '-m', 'immediate', '-w', '-t', '30', 'stop'], 40).catch(() => undefined);
        await rm(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    const { stderr } = error ?? {};
    await asOwner('pg_ctl', ['--pgdata', data, '-m', 'immediate', 'stop'], 20).catch(() => undefined);
    await rm(folder, { recursive: true, force: true });
    throw new Error(`could not start a test PostgreSQL from ${bin}: ${error.message}${stderr ? `\n${stderr}` : ''}`, {
      cause: error,
    });
  }
}
