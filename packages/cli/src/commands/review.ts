import type { Command } from 'commander';

// Placeholder until its issue lands: registers nothing.
export function registerReview(_program: Command): void {}
