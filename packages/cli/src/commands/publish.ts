import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerPublish(_program: Command): void {}
