#!/usr/bin/env node
import { serveReexecArguments } from '@gateway/runtime/node-flags';

// `gateway serve` runs with V8's young generation bounded (@gateway/runtime's node-flags.ts says why): where
// Node can replace its own process (22.15+ on POSIX), it does so now, before loading anything else.
const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
const reexec = serveReexecArguments(process.argv, process.execArgv, process.env.NODE_OPTIONS, typeof execve === 'function');
if (reexec) execve!(process.execPath, reexec, process.env);
const { runCli } = await import('./program.js');

// `gateway --help | head` closes stdout early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const exitCode = await runCli(process.argv.slice(2));
process.exitCode = exitCode;
