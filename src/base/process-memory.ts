/**
 * The memory this process may use, for the defaults sized by it (the ledger's page cache, the resolve cache): the
 * machine's, or the cgroup's limit when one is set and lower (`process.constrainedMemory()`, a container's
 * `memory.max`).
 */
import { totalmem } from 'node:os';

/** The machine's memory, or the cgroup's limit when lower (no limit reads as 0 or as more than the machine has). */
export function processMemoryBytes(): number {
  return memoryWithin(totalmem(), process.constrainedMemory());
}

/** `total`, or `limit` when it is a positive number below it. */
export function memoryWithin(total: number, limit: number | undefined): number {
  return limit !== undefined && limit > 0 && limit < total ? limit : total;
}
