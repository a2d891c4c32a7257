import { relative } from 'node:path';
import type { Command } from 'commander';
import { EXIT_CODES, loadConfig, verifyLockFile, type VerificationProblem, type VerificationReport } from '@gateway/core';
import { contextFrom, printResult } from '../context.js';

function where(problem: VerificationProblem): string {
  const parts = [problem.source, problem.publication].filter(Boolean).join('/');
  return [parts, problem.tool].filter(Boolean).join(' ');
}

function describeReport(report: VerificationReport, lockName: string, configName: string): string[] {
  if (report.ok) {
    const inUse = report.sources.filter((source) => source.inUse !== null);
    const tools = inUse.reduce((total, source) => total + source.toolCount, 0);
    const lines = [
      `${lockName} verified against ${configName}: ${report.sources.length} source${report.sources.length === 1 ? '' : 's'}, ` +
        `${inUse.length} publication${inUse.length === 1 ? '' : 's'} in use, ${tools} tool${tools === 1 ? '' : 's'}`,
    ];
    for (const source of report.sources) {
      const state = source.inUse
        ? `${source.inUse} in use, ${source.toolCount} tool${source.toolCount === 1 ? '' : 's'}, signed by ${source.keyId}`
        : 'nothing in use';
      lines.push(`  ${source.name}  ${state}${source.proposed ? ` (${source.proposed} proposed)` : ''}`);
    }
    lines.push('ok');
    return lines;
  }
  const count = report.problems.length;
  const lines = [`${lockName} FAILED verification against ${configName}: ${count} problem${count === 1 ? '' : 's'}`];
  for (const problem of report.problems) {
    const location = where(problem);
    lines.push(`  ${problem.code}${location ? `  ${location}` : ''}`, `    ${problem.message}`);
  }
  lines.push('docs/publishing.md explains each code; fix the lock with `gateway import`, `review` and `publish`, never by hand');
  return lines;
}

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check tools.lock: signatures by trusted keys, fingerprints, tool names, consistency with gateway.yaml')
    .addHelpText(
      'after',
      '\nChecks every in-use publication is signed by a key under trust.keys and its signature matches, every\n' +
        "operation's fingerprint matches its content, tool counts, tool names unique across sources, and that the\n" +
        'lock holds exactly the sources of gateway.yaml. The server runs the same checks before loading a lock.\n' +
        '\nExit codes: 0 verified, 6 problems found (listed; --json gives {ok, problems:[{code, source,\n' +
        'publication, tool, message}]}), 3 configuration unreadable, 5 lock missing or not YAML.\n' +
        '\nExamples:\n' +
        '  gateway verify\n' +
        '  gateway verify --json',
    )
    .action(async (_options: unknown, command: Command) => {
      const context = contextFrom(command);
      const loaded = await loadConfig(context.configPath);
      const { report } = await verifyLockFile(context.lockPath, loaded);
      const cwd = process.cwd();
      const name = (path: string) => (relative(cwd, path).startsWith('..') ? path : relative(cwd, path) || path);
      printResult(context, describeReport(report, name(context.lockPath), name(context.configPath)), report);
      if (!report.ok) process.exitCode = EXIT_CODES.verification;
    });
}
