/**
 * The verdict on a change, measured where the model never was (DESIGN.md "Evidence the model could not touch"):
 * fresh sandboxes on the base commit and on base + patch, each running the repository's set-up and test commands in
 * the bot's clean shell, per-test results where the runner gives them, and scans of what the patch adds.
 *
 * This file is the contract between the verifier (src/verify/, which measures) and what publishes the verdict (the
 * round pipeline, the check run, the PR description, the status comment, the run page, the CLI). Everything here is
 * plain data: it is stored with the round and serialised as `verification.json`.
 */

/** One test as a report or a parsed log names it. `id` is stable across base and patched runs (the join key). */
export interface TestCaseResult {
  /** `path/to/test_file.py::TestClass::test_name`, `suite › name`, `pkg.TestName` …, as the parser builds it. */
  id: string;
  status: 'passed' | 'failed' | 'error' | 'skipped';
  /** Repository-relative file of the test, when the report says it (used for annotations). */
  file?: string;
  line?: number;
  /** A short failure message, clipped and redacted (never a whole log). */
  message?: string;
}

/** Where the per-test results of one command came from; `exit_code` means none could be read. */
export type TestSource =
  'junit' | 'pytest-log' | 'unittest-log' | 'go-json' | 'jest-json' | 'jest-log' | 'cargo-log' | 'exit_code';

/** One of the bot's own commands (set-up or test) run in a verification sandbox. */
export interface VerifyCommandRun {
  command: string;
  /** null when killed (timeout, cancel) or not run. */
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  /** Last part of stdout+stderr, redacted and clipped (see COMMAND_OUTPUT_TAIL_CHARS). */
  outputTail: string;
  /** Per-test results; empty when `source` is `exit_code`. */
  tests: TestCaseResult[];
  source: TestSource;
  /** Set when the command did not run (an earlier set-up failed, the time budget ran out …): why, in one line. */
  notRun?: string;
}

/** One side of the comparison: the base commit, or base + patch. */
export interface VerifySide {
  commit: string;
  setup: VerifyCommandRun[];
  tests: VerifyCommandRun[];
  /** True when this side's result came from the base-result cache (never for the patched side). */
  cached?: boolean;
  /** Whether the set-up was restored from a warm-start snapshot instead of run (issue #27). */
  setupReused?: boolean;
  /** Set when the side could not be measured at all (sandbox would not start, time budget …). */
  notRun?: string;
}

/** A test's change between the two sides. */
export interface TestChange {
  id: string;
  /** The command it came from (index into the test commands, and its text). */
  command: string;
  base?: TestCaseResult['status'] | 'absent';
  patched?: TestCaseResult['status'] | 'absent';
  /** When the base's test files also ran against the patched code (Verdict.baseTestsOnPatch): the status there. */
  baseTestsOnPatch?: TestCaseResult['status'] | 'absent';
  file?: string;
  line?: number;
  /** Failure message on the patched side (regressions, still failing), clipped. */
  message?: string;
}

/** A test file the patch touched, and what happened to the tests in it. */
export interface TestFileChange {
  file: string;
  /**
   * `unchanged`: the patch did not touch this file, yet tests in it are gone or skipped on the patch (a changed
   * conftest, configuration or code that skips them): they are named here all the same.
   */
  change: 'added' | 'modified' | 'deleted' | 'unchanged';
  /** Tests present on base and gone on the patch. */
  removedTests: string[];
  /** Tests that ran on base and are skipped on the patch. */
  newlySkipped: string[];
  /**
   * Tests whose result the patch's edit of the file changed: on the patched code, the base's version of the test
   * and the patch's version give different results (measured, when Verdict.baseTestsOnPatch ran).
   */
  changedTests: string[];
}

/** A finding of a scanner on a line the patch added. */
export interface Finding {
  kind: 'security' | 'secret';
  /** The scanner (`bandit`, `semgrep`, `detect-secrets`, …). */
  tool: string;
  /** The scanner's rule id (`B602`, `python.lang.security.audit.eval-detected`, `AWS Access Key` …). */
  rule: string;
  severity: 'low' | 'medium' | 'high';
  /** Repository-relative path on the patched side. */
  file: string;
  line: number;
  /** What the rule says, never the secret itself (secrets are masked before they reach this field). */
  message: string;
}

/** A scan that ran, or why it did not. */
export interface ScanStatus {
  tool: string;
  ran: boolean;
  /** When not run: why (disabled, not installed in the image, timed out, crashed …). */
  reason?: string;
  /** How many files of the patch it looked at. */
  files?: number;
}

export type VerifyConclusion = 'success' | 'failure' | 'neutral';

export interface Verdict {
  /** `success`: no regression and every test command passes on the patch; `failure`: a regression (or a test
   * command failing on the patch, or a finding); `neutral`: nothing to run. */
  conclusion: VerifyConclusion;
  /** One line a reviewer reads first ("1 test fixed, no regressions", "2 regressions: …"). */
  headline: string;
  base: VerifySide;
  patched: VerifySide;
  /** Failed (or errored) on base, pass on the patch. */
  fixed: TestChange[];
  /** Passed on base, fail, error, are skipped or are gone on the patch. */
  regressions: TestChange[];
  stillFailing: TestChange[];
  /** Only on the patched side. */
  newTests: TestChange[];
  /** Test files the patch added, changed or deleted, with the tests it removed or skipped. */
  testFiles: TestFileChange[];
  /**
   * When the patch touched test files: the base's own test files run against the patched code (as SWE-bench resets
   * test files before grading); absent otherwise.
   */
  baseTestsOnPatch?: VerifySide;
  findings: Finding[];
  scans: ScanStatus[];
  /** True when no command gave per-test results on either side: the exit codes are the verdict (and the PR says so). */
  exitCodesOnly: boolean;
  durationMs: number;
}

/** Where verification stores base results so follow-up, CI-fix and retry rounds do not measure the base twice. */
export interface BaseResultCache {
  get(key: string): Promise<VerifySide | undefined>;
  set(key: string, side: VerifySide): Promise<void>;
}

/** What the verifier is told to do (src/verify/index.ts `verifyChange(options): Promise<Verdict>`). */
export interface VerifyOptions {
  /**
   * The runner's pristine clone at the base commit (a host path the bot made, never one the model chose). It is
   * copied for each sandbox, never changed.
   */
  repoDir: string;
  baseCommit: string;
  /** `git diff --binary` of the change against `baseCommit` (what will be published). */
  patch: string;
  setupCommands: string[];
  testCommands: string[];
  /** The repository's `setup.network` (set-up commands only; tests and scans never have network). */
  setupNetwork: boolean | import('../sandbox/egress/index.js').EgressGrant;
  /** Report files to read after each test command (`verify.reports` globs, repository-relative). */
  reportGlobs: string[];
  /** Opens a fresh sandbox on a workspace directory (same image, limits and user as the model's round). */
  sandboxFactory: (workspaceDir: string) => Promise<import('../sandbox/types.js').Sandbox>;
  /** Identifies the image/sandbox in cache keys (src/sandbox/identity.ts: the image's ID, or the host's identity). */
  environmentKey: string;
  /** Scans of what the patch adds. */
  security: boolean;
  secrets: boolean;
  /**
   * Identity of the repository in base-result cache keys: `<installationId>/<owner>/<repo>` on a runner, the
   * repository's real path (or its remote) for the CLI.
   */
  repository: string;
  /**
   * The task the patch answers (issue title and body as the model read it). A test that passed on base and is gone
   * or skipped on the patch is a regression unless this text names it (docs/verification.md, "Removed tests").
   */
  task?: string;
  /** How many sides run at once (default 2: base and patched together). */
  concurrency?: number;
  /** Upper bound for the whole verification (both sides and scans). */
  timeoutMs: number;
  /** Per set-up and per test command (the repository's limits, as in the model's round). */
  setupTimeoutMs: number;
  testTimeoutMs: number;
  cache?: BaseResultCache;
  /**
   * The set-up snapshot of the base (docs/warm-starts.md): a side whose patch touches no key file restores it
   * instead of running the set-up (VerifySide.setupReused). Sides never store one.
   */
  setupSnapshot?: import('../leaf/setUp.js').SetupSnapshotUse;
  signal?: AbortSignal;
  /** Progress for the status comment ("verifying: base set-up", …). */
  onProgress?: (detail: string) => void;
}
