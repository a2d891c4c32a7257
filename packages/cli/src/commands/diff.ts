import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerDiff(_program: Command): void {}
