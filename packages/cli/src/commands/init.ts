import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerInit(_program: Command): void {}
