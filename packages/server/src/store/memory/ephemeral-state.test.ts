import { ephemeralStateContract } from '../contract/ephemeral-state.contract.js';
import { MemoryEphemeralState } from './ephemeral-state.js';

/** One process: both "handles" are the one in-memory store. */
ephemeralStateContract('memory', async () => {
  const state = new MemoryEphemeralState();
  return { first: state, second: state, close: async () => undefined };
});
