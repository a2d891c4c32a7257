import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerSecrets(_program: Command): void {}
