/**
 * A port for a server a test starts later on a port it must know first (a shell block of the docs, a shared public
 * URL). Not `listen(0)`: that port comes from the kernel's ephemeral range (32768–60999 on Linux), where every
 * outgoing connection of the whole suite also takes its local port, so between closing the probe and the server's
 * bind another socket could take it (the docs test once waited 30 s for a server that had failed with
 * EADDRINUSE). These come from below that range, at random, never twice in one process, and are checked free.
 */
import { portIsFree } from './processes.js';

const LOW = 20_000;
const HIGH = 32_000;
const given = new Set<number>();

export async function unusedPort(): Promise<number> {
  for (;;) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (given.has(port)) continue;
    given.add(port);
    if (await portIsFree(port)) return port;
  }
}
