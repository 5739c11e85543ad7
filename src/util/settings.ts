/**
 * Every setting the app (`npm start`), the runner (`npm run runner`) and the command line (`frognano`) read from the
 * environment, in one table: name, parser, default, accepted values and a doc line. docs/configuration.md is checked
 * against it (test/util/settings.test.ts), and each entry point calls checkSettings() before anything else runs, so a
 * value that does not parse stops the process with one line that names the variable and what it accepts, instead of
 * being ignored (FROGNANO_FAIR_SHARE=maybe) or failing later with a stack (a missing FROGNANO_QUOTAS_FILE).
 *
 * The modules that build a configuration (src/runner/config.ts, src/sandbox/config.ts ...) still check how settings
 * combine (REDIS_URL with REDIS_SENTINELS, a backend without its model); the table decides what each value may be.
 */
import {
  bool,
  existingFile,
  hostPorts,
  jsonObject,
  matching,
  num,
  oneOf,
  text,
  url,
  ValueRejected,
  type Parser,
} from './settingParsers.js';

export type Program = 'app' | 'runner' | 'cli';

export interface SettingSpec<T> {
  parser: Parser<T>;
  /** The programs that read it (and refuse to start when it does not parse). */
  programs: readonly Program[];
  /** The default, in words, as docs/configuration.md shows it; absent: none. */
  default?: string;
  doc: string;
  /** Its value is never repeated in a message. */
  secret?: boolean;
  /** What to do when it is wrong, after the accepted values. */
  hint?: string;
}

const APP = ['app'] as const;
const RUNNER = ['runner'] as const;
const CLI = ['cli'] as const;
const SERVICE = ['app', 'runner'] as const;
const MODEL = ['runner', 'cli'] as const;
const ALL = ['app', 'runner', 'cli'] as const;

const whole = (min: number, max?: number) => num({ whole: true, min, max });
const positive = num({ above: 0 });
const httpUrl = url('http', 'https');

/** Written by the setup page; a key path that does not exist is the first thing a fresh `.env` meets. */
const KEY_HINT =
  'register the App first (`npm start` without APP_ID opens the setup page, which writes the key) or download a key ' +
  "from the App's settings page; or set PRIVATE_KEY to the key itself";

export const SETTINGS = {
  // GitHub App
  APP_ID: { parser: whole(1), programs: SERVICE, default: '(setup page)', doc: "the App's numeric id" },
  PRIVATE_KEY: {
    parser: matching(/PRIVATE KEY/, 'a PEM private key (newlines as \\n)'),
    programs: SERVICE,
    secret: true,
    default: '(setup page)',
    doc: "the App's private key as PEM text",
  },
  PRIVATE_KEY_PATH: {
    parser: existingFile('PEM private key'),
    programs: SERVICE,
    default: '(setup page)',
    doc: "the App's private key as a file path",
    hint: KEY_HINT,
  },
  WEBHOOK_SECRET: { parser: text, programs: APP, secret: true, doc: 'secret GitHub signs webhook deliveries with' },
  WEBHOOK_PROXY_URL: { parser: httpUrl, programs: APP, doc: 'webhook forwarding channel in local development' },
  FROGNANO_SMEE_URL: {
    parser: httpUrl,
    programs: APP,
    default: 'https://smee.io',
    doc: 'the smee server the setup page opens a webhook channel on',
  },
  NO_SMEE_SETUP: { parser: oneOf('true', 'false'), programs: APP, doc: '`true`: the setup page opens no channel' },
  GHE_HOST: {
    parser: matching(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, 'a host name (no scheme), e.g. github.example.org'),
    programs: SERVICE,
    doc: 'GitHub Enterprise Server host name',
  },
  GHE_PROTOCOL: { parser: oneOf('https', 'http'), programs: APP, default: 'https', doc: 'scheme of GHE_HOST' },
  GH_ORG: { parser: text, programs: APP, doc: 'create the App under this organization in the setup flow' },
  FROGNANO_GITHUB_API_URL: { parser: httpUrl, programs: RUNNER, default: 'https://api.github.com', doc: 'REST API' },
  FROGNANO_GIT_BASE_URL: {
    parser: url('https', 'http', 'file'),
    programs: RUNNER,
    default: 'https://github.com',
    doc: 'where the runner clones and pushes',
  },
  // The app's server
  HOST: { parser: text, programs: APP, default: 'localhost', doc: 'where the app listens' },
  PORT: { parser: whole(0, 65535), programs: APP, default: '3000', doc: 'where the app listens' },
  WEBHOOK_PATH: {
    parser: matching(/^\//, 'a path starting with /'),
    programs: APP,
    default: '/api/github/webhooks',
    doc: 'path GitHub posts webhooks to',
  },
  NODE_ENV: { parser: text, programs: APP, doc: '`production`: no setup page' },
  FROGNANO_LABEL: { parser: text, programs: APP, default: 'frognano', doc: 'the label that triggers a job' },
  // Run pages and the trajectory store
  FROGNANO_PUBLIC_URL: { parser: httpUrl, programs: SERVICE, doc: "the app's public base URL" },
  FROGNANO_TRUSTED_PROXIES: { parser: text, programs: APP, doc: 'reverse proxies whose headers name the address' },
  GITHUB_CLIENT_ID: { parser: text, programs: APP, doc: "the App's OAuth client id" },
  GITHUB_CLIENT_SECRET: { parser: text, programs: APP, secret: true, doc: "the App's OAuth client secret" },
  FROGNANO_SESSION_SECRET: { parser: text, programs: APP, secret: true, doc: 'key that signs session cookies' },
  FROGNANO_TRAJECTORY_STORE: {
    parser: text,
    programs: SERVICE,
    default: '.frognano/runs',
    doc: 'a directory or s3://bucket/prefix',
  },
  FROGNANO_S3_ENDPOINT: { parser: httpUrl, programs: SERVICE, doc: 'an S3-compatible server' },
  FROGNANO_S3_REGION: { parser: text, programs: SERVICE, doc: 'its region' },
  FROGNANO_TRAJECTORY_RETENTION_DAYS: { parser: positive, programs: SERVICE, default: '90', doc: 'retention' },
  FROGNANO_TRAJECTORY_MAX_BYTES: { parser: positive, programs: SERVICE, default: '16 MiB', doc: 'one round, at most' },
  // Redis, queue, fair share, quotas
  REDIS_URL: {
    parser: url('redis', 'rediss'),
    programs: SERVICE,
    default: 'redis://127.0.0.1:6379',
    doc: 'Redis',
  },
  REDIS_SENTINELS: { parser: hostPorts, programs: SERVICE, doc: 'Sentinel instead of REDIS_URL' },
  REDIS_SENTINEL_NAME: { parser: text, programs: SERVICE, doc: "the Sentinel master's name" },
  REDIS_CLUSTER_NODES: { parser: hostPorts, programs: SERVICE, doc: 'Redis Cluster instead of REDIS_URL' },
  REDIS_PASSWORD: { parser: text, programs: SERVICE, secret: true, doc: 'Sentinel or Cluster password' },
  REDIS_SENTINEL_PASSWORD: { parser: text, programs: SERVICE, secret: true, doc: "the Sentinels' password" },
  REDIS_TLS: { parser: oneOf('0', '1', 'true', 'false'), programs: SERVICE, doc: 'TLS for Sentinel and Cluster' },
  FROGNANO_QUEUE_PREFIX: { parser: text, programs: SERVICE, default: 'bull', doc: 'key prefix of the queue' },
  FROGNANO_FAIR_SHARE: {
    parser: oneOf('on', 'off'),
    programs: SERVICE,
    default: 'on',
    doc: '`off`: first come, first served',
  },
  FROGNANO_MODEL_SLOTS: { parser: whole(1), programs: APP, doc: 'jobs the dispatcher keeps in the runners queue' },
  FROGNANO_QUOTAS_FILE: {
    parser: existingFile('YAML quotas'),
    programs: APP,
    default: 'none: no quotas',
    doc: 'the quotas file',
    hint: 'unset it for no quotas (docs/operating-at-scale.md#quotas)',
  },
  // Runner
  FROGNANO_CONCURRENCY: { parser: whole(1, 64), programs: RUNNER, default: '1', doc: 'jobs at once' },
  FROGNANO_RUNNER_NAME: {
    parser: matching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, '1-63 letters, digits, dots, dashes or underscores'),
    programs: RUNNER,
    doc: 'the runner in public texts',
  },
  FROGNANO_WORK_DIR: { parser: text, programs: RUNNER, doc: 'clones and sandbox workspaces' },
  FROGNANO_TRAJECTORY_DIR: { parser: text, programs: RUNNER, doc: "each job's transcript" },
  FROGNANO_GIT_CACHE_DIR: { parser: text, programs: RUNNER, doc: 'bare git mirrors' },
  FROGNANO_GIT_CACHE_GB: { parser: num({ min: 0 }), programs: RUNNER, default: '20', doc: 'git mirror budget' },
  FROGNANO_SETUP_CACHE_DIR: { parser: text, programs: RUNNER, doc: 'set-up snapshots' },
  FROGNANO_SETUP_CACHE_GB: { parser: num({ min: 0 }), programs: RUNNER, default: '20', doc: 'set-up budget' },
  FROGNANO_SETUP_CACHE_MAX_MB: { parser: num({ min: 1 }), programs: RUNNER, default: '2048', doc: 'largest one' },
  FROGNANO_BOT_NAME: { parser: text, programs: RUNNER, default: 'frognano[bot]', doc: 'commit author' },
  FROGNANO_BOT_EMAIL: {
    parser: matching(/^.{3,}$/, 'an email address'),
    programs: RUNNER,
    doc: 'commit author email',
  },
  FROGNANO_MAX_TURNS: { parser: whole(1, 1000), programs: RUNNER, default: '100', doc: 'model turns per job' },
  FROGNANO_WALL_TIME_MINUTES: { parser: positive, programs: RUNNER, default: '50', doc: 'time per job' },
  FROGNANO_SHUTDOWN_GRACE_SECONDS: { parser: num({ min: 0 }), programs: RUNNER, default: '60', doc: 'on SIGTERM' },
  FROGNANO_LOCK_DURATION_MS: { parser: whole(5000), programs: RUNNER, default: '120000', doc: 'BullMQ job lock' },
  FROGNANO_STALLED_INTERVAL_MS: { parser: whole(1000), programs: RUNNER, default: '60000', doc: 'stall checks' },
  FROGNANO_MAX_STALLED_COUNT: { parser: whole(0), programs: RUNNER, default: '2', doc: 'retries of a stalled job' },
  FROGNANO_OPS_PORT: { parser: whole(0, 65535), programs: RUNNER, doc: "port of the runner's ops server" },
  FROGNANO_VERIFY: { parser: oneOf('on', 'off'), programs: RUNNER, default: 'on', doc: 'verification' },
  FROGNANO_EVAL_PULL_IMAGES: { parser: oneOf('on', 'off'), programs: RUNNER, default: 'off', doc: 'eval images' },
  // Sampling (src/leaf/sampling.ts holds the same rules for the CLI's flags)
  FROGNANO_TEMPERATURE: { parser: num({ min: 0, max: 5 }), programs: RUNNER, doc: 'sampling' },
  FROGNANO_TOP_P: { parser: num({ above: 0, max: 1 }), programs: RUNNER, doc: 'sampling' },
  FROGNANO_TOP_K: { parser: whole(0), programs: RUNNER, doc: 'sampling' },
  FROGNANO_MIN_P: { parser: num({ min: 0, max: 1 }), programs: RUNNER, doc: 'sampling' },
  FROGNANO_REPETITION_PENALTY: { parser: num({ above: 0, max: 10 }), programs: RUNNER, doc: 'sampling' },
  FROGNANO_SEED: { parser: whole(0), programs: RUNNER, doc: 'sampling' },
  FROGNANO_ENABLE_THINKING: { parser: bool, programs: RUNNER, doc: 'sampling' },
  FROGNANO_PARALLEL_TOOL_CALLS: { parser: bool, programs: RUNNER, doc: 'sampling' },
  // Model
  FROGNANO_BACKEND: { parser: oneOf('onnx', 'openai', 'replay'), programs: MODEL, doc: 'the model backend' },
  FROGNANO_MODEL_DIR: { parser: text, programs: MODEL, doc: 'onnx: the exported model directory' },
  FROGNANO_ONNX_DEVICE: { parser: oneOf('cpu', 'cuda'), programs: MODEL, default: 'cpu', doc: 'onnx device' },
  FROGNANO_ONNX_THREADS: { parser: whole(1), programs: MODEL, doc: 'onnx: intra-op CPU threads' },
  FROGNANO_ONNX_MODEL_FILE: { parser: text, programs: MODEL, doc: 'onnx: which .onnx file' },
  FROGNANO_ONNX_DTYPE: {
    parser: oneOf('fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'),
    programs: MODEL,
    doc: 'onnx: weight variant',
  },
  FROGNANO_OPENAI_BASE_URL: { parser: httpUrl, programs: MODEL, doc: 'openai: server URL' },
  FROGNANO_OPENAI_MODEL: { parser: text, programs: MODEL, doc: 'openai: served model name' },
  FROGNANO_OPENAI_API_KEY: { parser: text, programs: MODEL, secret: true, doc: 'openai: bearer key' },
  FROGNANO_OPENAI_TIMEOUT_MS: { parser: whole(1), programs: MODEL, doc: 'openai: request timeout' },
  FROGNANO_OPENAI_STALL_TIMEOUT_MS: { parser: whole(1), programs: MODEL, doc: 'openai: stalled stream' },
  FROGNANO_OPENAI_MAX_RETRIES: { parser: whole(0, 20), programs: MODEL, doc: 'openai: retries' },
  FROGNANO_OPENAI_CONTEXT_LENGTH: { parser: whole(1), programs: MODEL, doc: 'openai: context window' },
  FROGNANO_OPENAI_EXTRA_BODY: { parser: jsonObject, programs: MODEL, doc: 'openai: extra request fields' },
  FROGNANO_REPLAY_FILE: { parser: text, programs: MODEL, doc: 'replay: scripted turns' },
  HF_TOKEN: { parser: text, programs: CLI, secret: true, doc: 'Hugging Face token' },
  HF_ENDPOINT: { parser: httpUrl, programs: CLI, default: 'https://huggingface.co', doc: 'the Hub' },
  FROGNANO_EXPORT_PYTHON: {
    parser: text,
    programs: CLI,
    default: '(a venv it creates)',
    doc: 'the Python that runs the ONNX exporter',
  },
  // Sandbox
  FROGNANO_SANDBOX: {
    parser: oneOf('docker', 'bwrap', 'local', 'auto'),
    programs: MODEL,
    default: 'auto',
    doc: 'the sandbox',
  },
  FROGNANO_SANDBOX_IMAGE: { parser: text, programs: MODEL, default: 'frognano-sandbox:latest', doc: 'docker image' },
  FROGNANO_SANDBOX_MEMORY_MB: { parser: whole(64), programs: MODEL, default: '4096', doc: 'memory' },
  FROGNANO_SANDBOX_CPUS: { parser: num({ above: 0, max: 256 }), programs: MODEL, default: '2', doc: 'CPUs' },
  FROGNANO_SANDBOX_PIDS: { parser: whole(8), programs: MODEL, default: '512', doc: 'processes' },
  FROGNANO_SANDBOX_FILE_SIZE_MB: { parser: whole(1), programs: MODEL, default: '1024', doc: 'largest file' },
  FROGNANO_SANDBOX_TMP_MB: { parser: whole(1), programs: MODEL, default: '1024', doc: 'each tmpfs' },
  FROGNANO_SANDBOX_WORKSPACE_MB: { parser: whole(1), programs: MODEL, default: '4096', doc: 'workspace disk' },
  FROGNANO_SANDBOX_WORKSPACE_FILES: { parser: whole(10), programs: MODEL, default: '1000000', doc: 'files' },
  FROGNANO_SANDBOX_TIMEOUT_MS: { parser: whole(1), programs: MODEL, default: '120000', doc: 'one command' },
  FROGNANO_SANDBOX_JOB_TIMEOUT_MS: { parser: whole(1), programs: MODEL, default: '7200000', doc: 'one sandbox' },
  FROGNANO_SANDBOX_USER: {
    parser: matching(/^[1-9]\d*:[1-9]\d*$/, 'UID:GID, both non-zero'),
    programs: MODEL,
    default: '1000:1000',
    doc: 'who commands run as',
  },
  FROGNANO_SANDBOX_BWRAP: { parser: text, programs: MODEL, default: 'bwrap', doc: 'bwrap binary' },
  FROGNANO_SANDBOX_BWRAP_CGROUP: {
    parser: oneOf('required', 'off'),
    programs: MODEL,
    default: 'required',
    doc: 'job cgroups',
  },
  FROGNANO_SANDBOX_CGROUP_PARENT: { parser: text, programs: MODEL, doc: 'where job cgroups go' },
  FROGNANO_SETUP_NETWORK: {
    parser: oneOf('registries', 'all', 'off'),
    programs: RUNNER,
    default: 'registries',
    doc: "setup commands' network ceiling",
  },
  FROGNANO_SETUP_ALLOW: { parser: text, programs: RUNNER, doc: 'hosts every set-up may reach' },
  FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX: { parser: oneOf('0', '1'), programs: RUNNER, doc: 'allow the local sandbox' },
  DOCKER_HOST: { parser: text, programs: MODEL, default: '/var/run/docker.sock', doc: 'the Docker engine' },
  // Logs and the command line
  LOG_LEVEL: {
    parser: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'),
    programs: SERVICE,
    default: 'info',
    doc: 'log level',
  },
  GITHUB_TOKEN: { parser: text, programs: CLI, secret: true, doc: 'read private issues, higher rate limits' },
  GITHUB_API_URL: { parser: httpUrl, programs: CLI, doc: 'GitHub Enterprise API for the CLI' },
  FROGNANO_USE_DIST: { parser: oneOf('0', '1'), programs: CLI, doc: 'run the compiled dist/' },
} satisfies Record<string, SettingSpec<unknown>>;

export type SettingName = keyof typeof SETTINGS;
type ValueOf<N extends SettingName> = ReturnType<(typeof SETTINGS)[N]['parser']['parse']>;

/** A setting whose value does not parse: its message is the one line the process ends with. */
export class SettingError extends Error {
  override name = 'SettingError';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
  }
}

/** Set, trimmed, non-empty: an empty variable (a manifest's `FOO=`) means "not set". */
function rawOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

function rejection(name: string, raw: string, spec: SettingSpec<unknown>): SettingError {
  const shown = spec.secret ? `${name} (value not shown)` : `${name}=${JSON.stringify(raw).slice(1, -1).slice(0, 80)}`;
  const hint = spec.hint ? `; ${spec.hint}` : '';
  return new SettingError(name, `${shown} is not accepted: expected ${spec.parser.accepts}${hint}`);
}

/** The setting's value, or undefined when unset; throws SettingError when it does not parse. */
export function readSetting<N extends SettingName>(env: NodeJS.ProcessEnv, name: N): ValueOf<N> | undefined {
  const raw = rawOf(env, name);
  if (raw === undefined) return undefined;
  const spec: SettingSpec<unknown> = SETTINGS[name];
  try {
    return spec.parser.parse(raw) as ValueOf<N>;
  } catch (err) {
    if (err instanceof ValueRejected) throw rejection(name, raw, spec);
    throw err;
  }
}

/** Parses every setting `program` reads; throws the first SettingError (in table order). */
export function checkSettings(env: NodeJS.ProcessEnv, program: Program): void {
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    if ((SETTINGS[name].programs as readonly Program[]).includes(program)) readSetting(env, name);
  }
}

/**
 * For entry points: checks the settings and, when one does not parse, ends the process with exit code 2 and one line
 * on stderr (no stack: it is a setting to fix, not a fault).
 */
export function checkSettingsOrExit(
  env: NodeJS.ProcessEnv,
  program: Program,
  label: string,
  /** Checks across settings (a Redis mode and its companions) that throw a SettingError too. */
  combined: ((env: NodeJS.ProcessEnv) => unknown)[] = [],
): void {
  try {
    checkSettings(env, program);
    for (const check of combined) check(env);
  } catch (err) {
    if (!(err instanceof SettingError)) throw err;
    process.stderr.write(`${label}: ${err.message}\n`);
    process.exit(2);
  }
}
