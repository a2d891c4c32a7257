import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerKeys(_program: Command): void {}
