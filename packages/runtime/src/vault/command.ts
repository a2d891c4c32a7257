import { isAbsolute, resolve } from 'node:path';

export interface SecretCommand {
  /** argv; a relative program path (one containing '/') resolves against `directory`. */
  argv: readonly string[];
  /** The config's directory. */
  directory: string;
  timeoutMs: number;
  env: NodeJS.ProcessEnv;
}

/** What a secret command gave: its trimmed stdout, or why it failed (never its output: either stream may hold a secret). */
export type CommandOutcome = { stdout: string } | { failure: string };

/** The program a command runs, as messages name it. */
export function commandProgram(command: Pick<SecretCommand, 'argv' | 'directory'>): string {
  const program = command.argv[0]!;
  return program.includes('/') && !isAbsolute(program) ? resolve(command.directory, program) : program;
}

/**
 * Runs a command that prints a secret, without a shell, stdin closed, stderr ignored, at most 1 MiB of stdout, in
 * its own process group so a timeout kills the helper's children too (a grandchild such as `sleep` in a shell
 * script would otherwise keep stdout open and the caller waiting past the timeout).
 */
export async function runSecretCommand(command: SecretCommand, extraArguments: readonly string[] = []): Promise<CommandOutcome> {
  const executable = commandProgram(command);
  // Loaded at the first run: a gateway on the env or file vault never loads execa (docs/server.md, "Memory").
  const { execa } = await import('execa');
  const subprocess = execa(executable, [...command.argv.slice(1), ...extraArguments], {
    reject: false,
    detached: process.platform !== 'win32',
    stdin: 'ignore',
    stderr: 'ignore',
    maxBuffer: 1024 * 1024,
    env: command.env,
    extendEnv: false,
    windowsHide: true,
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(subprocess.pid, () => subprocess.kill('SIGKILL'));
  }, command.timeoutMs);
  const result = await subprocess.finally(() => clearTimeout(timer));
  if (timedOut) return { failure: `did not answer within ${command.timeoutMs} ms` };
  if (result.failed) {
    const failure =
      result.exitCode !== undefined
        ? `exited with code ${result.exitCode}`
        : result.signal
          ? `was killed by ${result.signal}`
          : `could not be started (${(result as { code?: string }).code ?? 'unknown error'})`;
    return { failure };
  }
  return { stdout: String(result.stdout).trim() };
}

function killGroup(pid: number | undefined, fallback: () => void): void {
  if (pid === undefined || process.platform === 'win32') {
    fallback();
    return;
  }
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    fallback();
  }
}
