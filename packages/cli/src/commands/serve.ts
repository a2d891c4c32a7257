import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerServe(_program: Command): void {}
