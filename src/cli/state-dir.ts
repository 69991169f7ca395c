/** Where `ddn` keeps its small per-user state: `$XDG_STATE_HOME/ddn` (default `~/.local/state/ddn`). */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** `$XDG_STATE_HOME/ddn`, or `~/.local/state/ddn` when the variable is unset or empty. */
export function ddnStateDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_STATE_HOME !== undefined && env.XDG_STATE_HOME !== '' ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(base, 'ddn');
}
