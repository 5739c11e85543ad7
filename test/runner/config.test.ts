import { runnerConfigFromEnv } from '../../src/runner/config.js';
import { PRIVATE_KEY } from './fixtures.js';

describe('runnerConfigFromEnv', () => {
  const base = { APP_ID: '42', PRIVATE_KEY };

  it('applies defaults', () => {
    const c = runnerConfigFromEnv(base);
    expect(c).toMatchObject({
      appId: 42,
      gitBaseUrl: 'https://github.com',
      concurrency: 1,
      shutdownGraceSeconds: 60,
      maxStalledCount: 2,
    });
    expect(c.apiBaseUrl).toBeUndefined();
    expect(c.runnerName).toBeUndefined(); // registerRunner then names it runner-<hash of the hostname>
  });

  it('verifies by default; FROGNANO_VERIFY=off turns it off, anything else is an error naming the variable', () => {
    expect(runnerConfigFromEnv(base).verify).toBe('on');
    expect(runnerConfigFromEnv({ ...base, FROGNANO_VERIFY: 'OFF' }).verify).toBe('off');
    expect(runnerConfigFromEnv({ ...base, FROGNANO_VERIFY: 'on' }).verify).toBe('on');
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_VERIFY: 'sometimes' })).toThrow(
      'runner configuration: FROGNANO_VERIFY must be on or off',
    );
  });

  it('puts the git mirrors beside the work dir unless told, with a disk budget', () => {
    const d = runnerConfigFromEnv({ ...base, FROGNANO_WORK_DIR: '/srv/frognano/work' });
    expect(d).toMatchObject({ gitCacheDir: '/srv/frognano/frognano-git-cache', gitCacheGb: 20 });
    const c = runnerConfigFromEnv({ ...base, FROGNANO_GIT_CACHE_DIR: '/cache/git', FROGNANO_GIT_CACHE_GB: '2.5' });
    expect(c).toMatchObject({ gitCacheDir: '/cache/git', gitCacheGb: 2.5 });
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_GIT_CACHE_GB: '-1' })).toThrow(/FROGNANO_GIT_CACHE_GB/);
  });

  it('puts the set-up snapshots beside the work dir unless told, with a disk budget and a per-snapshot cap', () => {
    const d = runnerConfigFromEnv({ ...base, FROGNANO_WORK_DIR: '/srv/frognano/work' });
    expect(d).toMatchObject({
      setupCacheDir: '/srv/frognano/frognano-setup-cache',
      setupCacheGb: 20,
      setupCacheMaxMb: 2048,
    });
    const c = runnerConfigFromEnv({
      ...base,
      FROGNANO_SETUP_CACHE_DIR: '/cache/setup',
      FROGNANO_SETUP_CACHE_GB: '0',
      FROGNANO_SETUP_CACHE_MAX_MB: '64',
    });
    expect(c).toMatchObject({ setupCacheDir: '/cache/setup', setupCacheGb: 0, setupCacheMaxMb: 64 });
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_SETUP_CACHE_MAX_MB: '0' })).toThrow(
      /FROGNANO_SETUP_CACHE_MAX_MB/,
    );
  });

  it("reads the runner's public name", () => {
    expect(runnerConfigFromEnv({ ...base, FROGNANO_RUNNER_NAME: 'gpu-east-1' }).runnerName).toBe('gpu-east-1');
  });

  it('reads GitHub Enterprise, concurrency and escaped newlines in PRIVATE_KEY', () => {
    const c = runnerConfigFromEnv({
      ...base,
      PRIVATE_KEY: PRIVATE_KEY.replace(/\n/g, '\\n'),
      GHE_HOST: 'ghe.example',
      FROGNANO_CONCURRENCY: '2',
      FROGNANO_TRAJECTORY_DIR: '/data/t',
    });
    expect(c).toMatchObject({
      apiBaseUrl: 'https://ghe.example/api/v3',
      gitBaseUrl: 'https://ghe.example',
      concurrency: 2,
      trajectoryDir: '/data/t',
    });
    expect(c.privateKey).toBe(PRIVATE_KEY);
  });

  it('names the variable at fault and never echoes the key', () => {
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_CONCURRENCY: 'many' })).toThrow(
      /^runner configuration: FROGNANO_CONCURRENCY /,
    );
    expect(() => runnerConfigFromEnv({ APP_ID: '1', PRIVATE_KEY: 'secret-but-not-pem' })).toThrow(
      'runner configuration: PRIVATE_KEY is not a PEM private key',
    );
    try {
      runnerConfigFromEnv({ APP_ID: '1', PRIVATE_KEY: 'secret-but-not-pem' });
    } catch (e) {
      expect((e as Error).message).not.toContain('secret-but-not-pem');
    }
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_GIT_BASE_URL: 'ssh://x' })).toThrow(
      /FROGNANO_GIT_BASE_URL must start with/,
    );
    // The runner's public name goes into issue comments and pull requests: plain characters only.
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_RUNNER_NAME: '[x](https://evil.example)' })).toThrow(
      /FROGNANO_RUNNER_NAME must be 1-63/,
    );
    expect(() => runnerConfigFromEnv({ APP_ID: '1', PRIVATE_KEY_PATH: '/nonexistent/key.pem' })).toThrow(
      'PRIVATE_KEY_PATH: cannot read /nonexistent/key.pem: ENOENT',
    );
  });

  it("reads sampling overrides of upstream Leaf's eval settings, naming a bad variable", () => {
    expect(runnerConfigFromEnv(base).sampling).toEqual({});
    const c = runnerConfigFromEnv({
      ...base,
      FROGNANO_TEMPERATURE: '0',
      FROGNANO_TOP_K: '40',
      FROGNANO_SEED: '7',
      FROGNANO_ENABLE_THINKING: 'false',
    });
    expect(c.sampling).toEqual({ temperature: 0, topK: 40, seed: 7, enableThinking: false });
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_TOP_P: '1.5' })).toThrow(
      /^runner configuration: FROGNANO_TOP_P must be a number above 0, at most 1/,
    );
    expect(() => runnerConfigFromEnv({ ...base, FROGNANO_PARALLEL_TOOL_CALLS: 'maybe' })).toThrow(
      /FROGNANO_PARALLEL_TOOL_CALLS must be true or false/,
    );
  });
});
