import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerImport(_program: Command): void {}
