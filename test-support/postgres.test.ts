import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from './cli.js';
import { postgresBinaries, startPostgres, stopWhenGone } from './postgres.js';

const run = promisify(execFile);

/** psql over TCP (127.0.0.1), as a client that is not the cluster's owner: the password is what lets it in. */
async function tcpQuery(port: number, password: string, sql: string): Promise<string> {
  const { stdout } = await run(
    join(postgresBinaries(), 'psql'),
    ['-h', '127.0.0.1', '-p', String(port), '-U', 'gateway_test', '-d', 'postgres', '-X', '-A', '-t', '-c', sql],
    {
      env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' },
    },
  );
  return stdout.trim();
}

describe('the test PostgreSQL', () => {
  it('runs as a non-root user on a loopback port with password authentication, and stopping removes its folder', async () => {
    const server = await startPostgres();
    let folder: string;
    try {
      folder = await server.psql('SHOW data_directory');
      const pid = Number(readFileSync(join(folder, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      expect(uid).not.toBe(0);
      expect(await tcpQuery(server.port, server.password, 'SELECT 1')).toBe('1');
      await expect(tcpQuery(server.port, 'wrong', 'SELECT 1')).rejects.toThrow(/password authentication failed/);
      const url = await server.createDatabase();
      expect(url).toMatch(new RegExp(`^postgres://gateway_test:[^@]+@127\\.0\\.0\\.1:${server.port}/test_\\d+_1$`));
      expect(statSync(folder).isDirectory()).toBe(true);
      expect(folder).toBe(join(server.folder, 'data'));
      // Tests do not prove durability: no flush per commit keeps a database per test cheap.
      expect(await server.psql('SHOW fsync')).toBe('off');
      expect(await server.psql('SHOW synchronous_commit')).toBe('off');
    } finally {
      await server.stop();
    }
    expect(existsSync(folder)).toBe(false);
    await expect(tcpQuery(server.port, server.password, 'SELECT 1')).rejects.toThrow();
  });

  it('a durable cluster (what bench/replicas.mjs measures commits on) keeps fsync and synchronous commits on', async () => {
    const server = await startPostgres({ durable: true });
    try {
      expect(await server.psql('SHOW fsync')).toBe('on');
      expect(await server.psql('SHOW synchronous_commit')).toBe('on');
      expect(await server.psql('SHOW full_page_writes')).toBe('on');
    } finally {
      await server.stop();
    }
  });

  it('fails with the command that installs PostgreSQL when its binaries are missing', async () => {
    const empty = await temporaryDirectory('gateway-no-pg-');
    try {
      expect(() => postgresBinaries(empty.path, {})).toThrow(/PostgreSQL is not installed.*apt-get install -y postgresql/);
    } finally {
      await empty.cleanup();
    }
  });

  it('a test process that dies without stopping its cluster still has it stopped and its folder removed', async () => {
    const scratch = await temporaryDirectory('gateway-pg-watchdog-');
    try {
      const folder = join(scratch.path, 'cluster');
      mkdirSync(folder);
      const testProcess = spawn('sleep', ['60'], { stdio: 'ignore' });
      stopWhenGone(testProcess.pid!, ['touch', [join(scratch.path, 'stopped')]], folder);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(existsSync(folder)).toBe(true);
      testProcess.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (existsSync(folder) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(existsSync(folder)).toBe(false);
      expect(existsSync(join(scratch.path, 'stopped'))).toBe(true);
    } finally {
      await scratch.cleanup();
    }
  });
});
