import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerStatus(_program: Command): void {}
