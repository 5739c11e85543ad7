import path from 'node:path';
import { rmdir } from 'node:fs/promises';
import type { Verdict } from '../../verify/types.js';
import { assertSandboxKind, parseCommandArgs, parsePositiveInt } from '../args.js';
import { CliError, EXIT, readNamedFile, setupError, UsageError, type ExitCode } from '../exitCodes.js';
import { VERIFY_HELP } from '../help.js';
import { onInterrupt } from '../interrupt.js';
import { writeLine, type CliIo } from '../io.js';
import { prepareOutDir } from '../outDir.js';
import { ProgressReporter } from '../progress.js';
import { repoChecks, type RepoChecks } from '../repoChecks.js';
import { usableSandbox, type ConcreteSandboxConfig } from '../sandboxChoice.js';
import { checkSourceRepo, resolveCommit, type SourceRepo } from '../sourceRepo.js';
import { verdictText } from '../verdictText.js';
import { notMeasured, verifyFromCli, writeVerdict } from '../verification.js';

const OPTIONS = {
  base: { type: 'string' },
  setup: { type: 'string', multiple: true },
  test: { type: 'string', multiple: true },
  sandbox: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  'no-security': { type: 'boolean' },
  'no-secrets': { type: 'boolean' },
  'timeout-minutes': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'];

/** A patch larger than this is not a change anyone reviews; refusing it keeps the verifier's copies bounded. */
const MAX_PATCH_BYTES = 20 * 1024 * 1024;

/** `frognano verify`: the runner's verifier on any patch, whoever wrote it. */
export async function verifyCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('verify', args, OPTIONS);
  if (values.help) {
    io.stdout.write(VERIFY_HELP);
    return EXIT.OK;
  }
  try {
    return await runVerify(values, positionals, io);
  } catch (err) {
    // --json promises a JSON document on stdout whatever happens, as solve's does.
    if (values.json && err instanceof CliError)
      writeLine(
        io.stdout,
        JSON.stringify({ exitCode: err.exitCode, error: err.message, hint: err.hint ?? null }, null, 2),
      );
    throw err;
  }
}

interface Prepared {
  repo: SourceRepo;
  baseCommit: string;
  patch: string;
  checks: RepoChecks;
  sandboxCfg: ConcreteSandboxConfig;
  timeoutMinutes: number;
}

/** Everything checked before a sandbox starts: usage errors exit 2, setup errors 3. */
async function prepare(values: Values, positionals: string[], io: CliIo): Promise<Prepared> {
  if (positionals.length !== 2)
    throw new UsageError(
      `verify takes the repository directory and the patch file, got ${positionals.length} arguments.`,
      'verify',
    );
  assertSandboxKind(values.sandbox, 'verify');
  const timeoutFlag = values['timeout-minutes'];
  const timeoutOverride =
    timeoutFlag !== undefined ? parsePositiveInt('timeout-minutes', timeoutFlag, 'verify') : undefined;
  const repo = await checkSourceRepo(positionals[0], io.cwd);
  const baseCommit = values.base !== undefined ? await resolveCommit(repo.dir, values.base) : repo.head;
  const patch = await readPatch(path.resolve(io.cwd, positionals[1]));
  const checks = await repoChecks(repo.dir, { setup: values.setup, test: values.test });
  if (checks.testCommands.length === 0)
    throw new UsageError('verify needs test commands: --test CMD, or testCommands in .github/frognano.yml.', 'verify');
  const sandboxCfg = await usableSandbox(values.sandbox, io.env);
  return {
    repo,
    baseCommit,
    patch,
    checks,
    sandboxCfg,
    timeoutMinutes: timeoutOverride ?? checks.verify.timeoutMinutes,
  };
}

async function readPatch(file: string): Promise<string> {
  const patch = await readNamedFile(file, 'the patch file ', (code) =>
    code === 'ENOENT' ? 'give the path of a `git diff` output' : 'check the file and its permissions',
  );
  if (!patch.trim())
    throw setupError(`the patch file ${file} is empty`, 'give the output of `git diff` against the base');
  if (Buffer.byteLength(patch) > MAX_PATCH_BYTES)
    throw setupError(`the patch file ${file} is larger than ${MAX_PATCH_BYTES / 1024 / 1024} MiB`);
  return patch;
}

async function runVerify(values: Values, positionals: string[], io: CliIo): Promise<number> {
  const p = await prepare(values, positionals, io);
  const out = await prepareOutDir({ out: values.out, cwd: io.cwd, sourceDir: p.repo.dir, command: 'verify' });
  const progress = new ProgressReporter(io.stderr, { tty: Boolean(io.stderr.isTTY), columns: io.stderr.columns });
  if (p.sandboxCfg.kind === 'local')
    progress.note("warning: local sandbox: the repository's test commands run on this machine with no isolation");
  if (out.movedFromCwd)
    progress.note(`note: writing results to ${out.dir} (the current directory is inside the repository)`);
  const interrupt = onInterrupt(progress, io, 'stopping the verification');
  let verdict: Verdict;
  try {
    verdict = await verifyFromCli({
      repoDir: p.repo.dir,
      baseCommit: p.baseCommit,
      patch: p.patch,
      checks: p.checks,
      sandboxCfg: p.sandboxCfg,
      security: !values['no-security'] && p.checks.verify.security,
      secrets: !values['no-secrets'] && p.checks.verify.secrets,
      timeoutMs: p.timeoutMinutes * 60_000,
      signal: interrupt.signal,
      onProgress: (detail) => progress.phase(detail),
    });
  } catch (err) {
    await rmdir(out.dir).catch(() => undefined);
    throw new CliError(`the verifier failed: ${(err as Error).message}`, EXIT.RUNTIME);
  } finally {
    interrupt.dispose();
    progress.stop();
  }
  const file = await writeVerdict(out.dir, verdict);
  const code = interrupt.interrupted ? EXIT.INTERRUPTED : verifyExitCode(verdict);
  if (values.json) writeLine(io.stdout, JSON.stringify({ exitCode: code, verificationPath: file, verdict }, null, 2));
  else io.stdout.write(`${[...verdictText(verdict), '', `Verdict in ${file}`].join('\n')}\n`);
  return code;
}

/** 0 success or neutral (nothing to hold against the patch); 5 failure; 3 when a side could not be measured. */
export function verifyExitCode(v: Verdict): ExitCode {
  if (notMeasured(v)) return EXIT.SETUP;
  return v.conclusion === 'failure' ? EXIT.VERIFY_FAILED : EXIT.OK;
}
