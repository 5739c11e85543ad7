import type { ExecOptions } from './types.js';

/** System directories only: read-only in every sandbox, so nothing the model wrote can shadow a program. */
export const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Variables a clean command never takes from the caller: the shell start-up hooks, and what the script below sets
 * itself. Exported bash functions (`BASH_FUNC_name%%`) are dropped by their prefix.
 */
const RESERVED_VARS = new Set(['BASH_ENV', 'ENV', 'PATH', 'HOME', 'TMPDIR', 'SHELLOPTS', 'BASHOPTS', 'PROMPT_COMMAND']);

/**
 * Runs `$1` in a fresh, empty HOME and TMPDIR (a new directory in `$2`, /tmp unless the sandbox has a private one;
 * removed afterwards unless the command was killed), with a shell that reads
 * no start-up file. Whatever the model's commands left in the job's HOME or /tmp (a ~/.bash_profile, a PATH shim,
 * an exported function) is never looked at. The command runs in a bash of its own, so its `exit` or `cd` cannot
 * skip the clean-up.
 */
const FRESH_HOME_SCRIPT = `d=$(mktemp -d "$2/frognano-clean.XXXXXXXX") || exit 125
mkdir "$d/home" "$d/tmp" || exit 125
export HOME="$d/home" TMPDIR="$d/tmp"
/bin/bash --noprofile --norc -c "$1"
rc=$?
rm -rf "$d" 2>/dev/null
exit $rc`;

/**
 * The argv that runs `command` as one of the bot's own commands (setup, tests, the patch): through `env -i`, so
 * the environment is exactly the sandbox's base one plus the caller's variables, with a fixed PATH and without
 * BASH_ENV, ENV or exported functions; then FRESH_HOME_SCRIPT. Every sandbox runs it the same way.
 */
export function cleanShellArgv(command: string, env: Record<string, string>, tmpParent = '/tmp'): string[] {
  const vars = Object.entries(env)
    .filter(([k]) => !RESERVED_VARS.has(k) && !k.startsWith('BASH_FUNC_') && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `${k}=${v}`);
  return [
    '/usr/bin/env',
    '-i',
    ...vars,
    `PATH=${CLEAN_PATH}`,
    '/bin/bash',
    '--noprofile',
    '--norc',
    '-c',
    FRESH_HOME_SCRIPT,
    'frognano-clean',
    command,
    tmpParent,
  ];
}

/**
 * What `Sandbox.exec` runs: the model's commands keep upstream Leaf's login shell (`bash -lc`); the bot's own
 * (`clean: true`) get cleanShellArgv, with the environment folded into the argv (`base` is the sandbox's own
 * baseEnv, since the spawn's environment is not passed on).
 */
export function shellCommand(
  command: string,
  options: ExecOptions,
  base: Record<string, string>,
  tmpParent?: string,
): { argv: string[]; options: ExecOptions } {
  if (!options.clean) return { argv: ['bash', '-lc', command], options };
  const argv = cleanShellArgv(command, { ...base, ...options.env }, tmpParent);
  return { argv, options: { ...options, env: undefined } };
}
