import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { parseAllowEntry, type RepoSetupNetwork } from '../sandbox/egress/index.js';

/** Where a repository configures the bot, relative to its root. */
export const REPO_CONFIG_PATH = '.github/frognano.yml';
const MAX_CONFIG_BYTES = 64 * 1024;

const command = z.string().min(1).max(4000);
const glob = z.string().min(1).max(500);

/** A report file glob: repository-relative (no leading `/` or `-`, no `..`); read inside the sandbox only. */
const reportGlob = glob.regex(/^(?![/-])(?!.*(^|\/)\.\.(\/|$))[^\0\\:]+$/, 'not a repository-relative glob');

/** `verify.timeoutMinutes` when unset: both sides' set-up and tests, and the scans. */
export const DEFAULT_VERIFY_TIMEOUT_MINUTES = 30;

/**
 * `verify`: the verdict on every change the bot publishes, measured in fresh sandboxes (docs/configuration.md).
 * `enabled` left unset means on when the repository has test commands.
 */
export const VerifyConfigSchema = z
  .object({
    enabled: z.boolean().optional(),
    /** Static analysis of what the patch adds (offline, in the sandbox). */
    security: z.boolean().default(true),
    /** A secrets scan of the lines the patch adds. */
    secrets: z.boolean().default(true),
    timeoutMinutes: z
      .number()
      .positive()
      .max(6 * 60)
      .default(DEFAULT_VERIFY_TIMEOUT_MINUTES),
    /** Report files (JUnit XML and the like) the test commands write, as repository-relative globs. */
    reports: z.array(reportGlob).max(50).default([]),
    /** A failing verdict: `repair` starts a round that answers it; `report` only publishes it. */
    onFailure: z.enum(['repair', 'report']).default('repair'),
    /** Repair rounds in a row per pull request; then it is labelled `frognano:needs-human`. */
    maxRepairRounds: z.number().int().min(0).max(5).default(1),
  })
  .strict()
  .default({
    security: true,
    secrets: true,
    timeoutMinutes: DEFAULT_VERIFY_TIMEOUT_MINUTES,
    reports: [],
    onFailure: 'repair',
    maxRepairRounds: 1,
  });
export type VerifyConfig = z.infer<typeof VerifyConfigSchema>;

/** Whether a round verifies its change: `verify.enabled`, or, unset, whether there are test commands. */
export function verifyEnabled(cfg: Pick<RepoConfig, 'verify' | 'testCommands'>): boolean {
  return cfg.verify.enabled ?? cfg.testCommands.length > 0;
}

const allowEntry = z
  .string()
  .max(300)
  .refine((e) => {
    try {
      parseAllowEntry(e);
      return true;
    } catch {
      return false;
    }
  }, 'an allow entry: host, *.host, host:port or https://host/path-prefix');
const networkMode = z.enum(['off', 'registries', 'all']);

/** `setup.network`: a boolean, a mode, or `{ mode, allow }`; always read as `{ mode, allow }`. */
const setupNetwork = z
  .union([
    z.boolean().transform((on) => ({ mode: on ? 'registries' : 'off', allow: [] as string[] })),
    networkMode.transform((mode) => ({ mode, allow: [] as string[] })),
    z.object({ mode: networkMode.default('registries'), allow: z.array(allowEntry).max(100).default([]) }).strict(),
  ])
  .default({ mode: 'off', allow: [] })
  .transform((n): RepoSetupNetwork => n as RepoSetupNetwork);

/**
 * `.github/frognano.yml`. Every field is optional; unknown keys are errors so a typo
 * (`maxTurn:`) is reported instead of silently ignored.
 */
export const RepoConfigSchema = z
  .object({
    /** Branch the work starts from and the pull request targets (default: the repository's default branch). */
    baseBranch: z
      .string()
      .min(1)
      .max(255)
      // git's ref rules, plus no leading '-' so the name can never read as a command-line option.
      .regex(/^(?!-)(?!.*\.\.)(?!.*\.lock$)[^\s~^:?*[\\]+$/, 'not a valid branch name')
      .optional(),
    /** Sandbox image for this repository (docker sandboxes only); must exist on the runner. */
    sandboxImage: z
      .string()
      .min(1)
      .max(300)
      .regex(/^[A-Za-z0-9._/:@-]+$/, 'not a valid image reference')
      .optional(),
    /** Run once in the sandbox before the model starts (install dependencies...). */
    setupCommands: z.array(command).max(20).default([]),
    /** Run in the sandbox after the model finishes; results go into the pull request body. */
    testCommands: z.array(command).max(20).default([]),
    limits: z
      .object({
        maxTurns: z.number().int().min(1).max(500).optional(),
        wallTimeMinutes: z
          .number()
          .positive()
          .max(24 * 60)
          .optional(),
        maxFilesChanged: z.number().int().min(1).max(10_000).default(20),
        maxLinesChanged: z.number().int().min(1).max(1_000_000).default(1000),
      })
      .strict()
      .default({ maxFilesChanged: 20, maxLinesChanged: 1000 }),
    /** Globs (picomatch, repo-relative) the agent's patch may not touch. */
    forbiddenPaths: z.array(glob).max(200).default([]),
    /** Allow patches that change `.github/workflows/**` (off: a model must not rewrite CI). */
    allowWorkflowChanges: z.boolean().default(false),
    setup: z
      .object({
        /**
         * Run `setupCommands` with network (installing dependencies) through the egress proxy; the agent's own
         * commands never have it. `true`/`registries`: the package registries, `all`: any public host,
         * `{ allow: [...] }`: the registries and these entries (docs/configuration.md).
         */
        network: setupNetwork,
        /**
         * Reuse a snapshot of what the set-up commands produced while the key files are unchanged
         * (docs/warm-starts.md); `false`: run the set-up every time.
         */
        cache: z.boolean().default(true),
        /** More files that decide the set-up's result (repository-relative globs), on top of the usual lock files. */
        cacheKeyFiles: z.array(reportGlob).max(50).default([]),
      })
      .strict()
      .default({ network: { mode: 'off', allow: [] }, cache: true, cacheKeyFiles: [] }),
    /** After a run that changed files but ended at a limit or failed: push the work to a branch (no PR) and link it. */
    publishFailedAttempts: z.boolean().default(false),
    followUp: z
      .object({
        /** Follow-up rounds per pull request; past it the PR is labelled `frognano:needs-human`. */
        maxRounds: z.number().int().min(0).max(50).default(5),
      })
      .strict()
      .default({ maxRounds: 5 }),
    ciFix: z
      .object({
        /** Answer failing CI on the bot's own pull request with a round of its own (docs/ci-fix.md). */
        enabled: z.boolean().default(true),
        /** Automatic rounds in a row per pull request; then it is labelled `frognano:needs-human`. */
        maxRounds: z.number().int().min(0).max(20).default(3),
        /**
         * Seconds to wait after the last completed check on a head before judging it: a workflow that registers
         * its checks late is seen. 0 judges as soon as every check present has finished.
         */
        settleSeconds: z.number().int().min(0).max(3600).default(60),
      })
      .strict()
      .default({ enabled: true, maxRounds: 3, settleSeconds: 60 }),
    verify: VerifyConfigSchema,
    approval: z
      .object({
        /**
         * Two-person rule (default): an approval by the person who triggered the run that wrote the head commit
         * does not satisfy the approval check. `true` lets it.
         */
        allowTriggerApproval: z.boolean().default(false),
      })
      .strict()
      .default({ allowTriggerApproval: false }),
    /** Extra instructions file for the model, besides `AGENTS.md` (default `.github/frognano.md`). */
    instructionsFile: z
      .string()
      .min(1)
      .max(300)
      // Repository-relative, no `..`, no leading `/` or `-`: it is read from git's object store, never the file system.
      .regex(/^(?![/-])(?!.*(^|\/)\.\.(\/|$))[^\0\\:*?"<>|]+$/, 'not a repository-relative file path')
      .optional(),
  })
  .strict();

export type RepoConfig = z.infer<typeof RepoConfigSchema>;

export class RepoConfigError extends Error {
  constructor(
    message: string,
    /** Dotted path of the offending field (`limits.maxTurns`), or undefined for YAML syntax errors. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'RepoConfigError';
  }
}

export function defaultRepoConfig(): RepoConfig {
  return RepoConfigSchema.parse({});
}

/** Parses the text of `.github/frognano.yml`; throws RepoConfigError naming the bad field. */
export function parseRepoConfig(text: string): RepoConfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    throw new RepoConfigError(`${REPO_CONFIG_PATH} is not valid YAML: ${first.message.split('\n')[0]}`);
  }
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new RepoConfigError(
      `${REPO_CONFIG_PATH} must be a mapping of settings, not ${Array.isArray(raw) ? 'a list' : typeof raw}`,
    );
  }
  const parsed = RepoConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    let field = issue.path.map(String).join('.');
    let message = issue.message;
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0];
      field = field ? `${field}.${key}` : key;
      message = 'unknown setting';
    }
    throw new RepoConfigError(`${REPO_CONFIG_PATH}: \`${field || '(root)'}\`: ${message}`, field || undefined);
  }
  return parsed.data;
}

/** Reads the config from a cloned repository; a missing file means the defaults. */
export async function loadRepoConfig(repoDir: string): Promise<{ config: RepoConfig; found: boolean }> {
  const file = path.join(repoDir, REPO_CONFIG_PATH);
  const st = await fs.lstat(file).catch(() => null);
  if (!st) return { config: defaultRepoConfig(), found: false };
  if (!st.isFile()) throw new RepoConfigError(`${REPO_CONFIG_PATH} must be a regular file`);
  if (st.size > MAX_CONFIG_BYTES)
    throw new RepoConfigError(`${REPO_CONFIG_PATH} is larger than ${MAX_CONFIG_BYTES} bytes`);
  return { config: parseRepoConfig(await fs.readFile(file, 'utf8')), found: true };
}
