#!/usr/bin/env node
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
