import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { createInstallationAccess } from '../../src/github/client.js';
import { GitMirrorCache } from '../../src/github/gitMirror.js';
import type { ModelBackend } from '../../src/inference/types.js';
import { createLogger } from '../../src/ops/logger.js';
import type { JobData } from '../../src/queue/schema.js';
import { SandboxConfigSchema } from '../../src/sandbox/index.js';
import { runnerVerifier } from '../../src/runner/verifier.js';
import { describeRunner, publicRunnerName } from '../../src/ops/runnerRegistry.js';
import type { RunnerContext } from '../../src/runner/types.js';
import type { BareRemote } from '../github/gitRepo.js';

export const { privateKey: PRIVATE_KEY } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

/** A token shaped like a real installation token, different in every run. */
export function fakeInstallationToken(): string {
  return `ghs_${randomBytes(27)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, 'x')
    .slice(0, 36)}`;
}

/** Unique owner per test: status-comment keys in the shared Redis are per owner/repo/issue. */
export function uniqueOwner(tag: string): string {
  return `e-${tag}-${randomBytes(4).toString('hex')}`;
}

export function captureLogs() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: createLogger({ name: 'runner-test', level: 'debug', destination }), lines };
}

export function jobData(owner: string, repo: string, over: Partial<JobData> = {}): JobData {
  return {
    installationId: 4242,
    owner,
    repo,
    issueNumber: 7,
    title: 'Greeting is wrong',
    body: 'hello.txt says "hi"; it should say "hello".',
    defaultBranch: 'main',
    triggeredBy: { login: 'maint' },
    attempt: 1,
    trigger: 'label',
    enqueuedAt: new Date().toISOString(),
    ...over,
  };
}

/** The test runner's hostname, and the name public texts use for it. */
export const TEST_HOSTNAME = 'gpu-7.rack-3.internal.example';
export const TEST_RUNNER_NAME = publicRunnerName(TEST_HOSTNAME);

export async function runnerContext(o: {
  redis: Redis;
  remote: BareRemote;
  backend: ModelBackend;
  logger: RunnerContext['logger'];
  /** The verify step as runner/service.ts wires it (verifyChange, base results cached in this Redis). */
  verify?: boolean;
}): Promise<RunnerContext & { cleanup(): Promise<void> }> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-runner-test-'));
  const app = { appId: 1, privateKey: PRIVATE_KEY };
  return {
    redis: o.redis,
    app,
    gitBaseUrl: o.remote.baseUrl,
    backend: o.backend,
    // The real isolation (bubblewrap: no network, own user, fresh env), as on a runner without Docker.
    sandbox: SandboxConfigSchema.parse({ kind: 'bwrap', defaultTimeoutMs: 60_000 }),
    workDir: path.join(root, 'work'),
    trajectoryDir: path.join(root, 'trajectories'),
    // As runner/service.ts builds it by default: every round's clone goes through the git mirror.
    gitCache: new GitMirrorCache({ dir: path.join(root, 'git-cache'), maxBytes: 1024 ** 3 }),
    // As runner/service.ts builds it: the public name, never the hostname.
    runnerDescription: describeRunner({
      name: TEST_RUNNER_NAME,
      gpu: 'cpu',
      model: 'replay:scripted',
      backend: 'replay',
      version: '0.1.0',
    }),
    logger: o.logger,
    progressIntervals: { jobEveryMs: 0, commentEveryMs: 0 },
    // The real token exchange (POST /app/installations/:id/access_tokens, answered by nock), minus retries.
    createAccess: (installationId, repo) => createInstallationAccess(app, { installationId, repo, retry: false }),
    ...(o.verify ? runnerVerifier(o.redis) : {}),
    cleanup: () => fs.rm(root, { recursive: true, force: true }),
  };
}

// The shared waits (test/support/waitFor.ts), under the names this file's users know.
export { waitFor, waitForJob as waitForFinish } from '../support/waitFor.js';
