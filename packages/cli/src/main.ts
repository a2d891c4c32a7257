#!/usr/bin/env -S node --max-semi-space-size=2
// The flag above bounds V8's young generation of every `gateway` process, `gateway serve` above all
// (@gateway/server's node-flags.ts says why; its value is SEMI_SPACE_FLAG there, and a test keeps them equal).
// `env -S` splits it from `node`; npm's and pnpm's Windows shims read the same line and pass the flag on.
import { runCli } from './program.js';

// `gateway --help | head` closes stdout early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const exitCode = await runCli(process.argv.slice(2));
process.exitCode = exitCode;
