import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerVerify(_program: Command): void {}
