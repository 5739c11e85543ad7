import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  defaultRepoConfig,
  loadRepoConfig,
  parseRepoConfig,
  RepoConfigError,
  verifyEnabled,
} from '../../src/github/repoConfig.js';

describe('.github/frognano.yml', () => {
  it('parses a full config', () => {
    const cfg = parseRepoConfig(`
baseBranch: develop
sandboxImage: frognano-sandbox:node20
setupCommands: [npm ci]
testCommands:
  - npm test
limits:
  maxTurns: 40
  wallTimeMinutes: 30
  maxFilesChanged: 5
  maxLinesChanged: 200
forbiddenPaths: ['secrets/**', '*.lock']
allowWorkflowChanges: true
`);
    expect(cfg).toEqual({
      baseBranch: 'develop',
      sandboxImage: 'frognano-sandbox:node20',
      setupCommands: ['npm ci'],
      testCommands: ['npm test'],
      limits: { maxTurns: 40, wallTimeMinutes: 30, maxFilesChanged: 5, maxLinesChanged: 200 },
      forbiddenPaths: ['secrets/**', '*.lock'],
      allowWorkflowChanges: true,
      setup: { network: { mode: 'off', allow: [] }, cache: true, cacheKeyFiles: [] },
      publishFailedAttempts: false,
      followUp: { maxRounds: 5 },
      ciFix: { enabled: true, maxRounds: 3, settleSeconds: 60 },
      approval: { allowTriggerApproval: false },
      verify: {
        security: true,
        secrets: true,
        timeoutMinutes: 30,
        reports: [],
        onFailure: 'repair',
        maxRepairRounds: 1,
      },
    });
  });

  it('fills defaults for an empty file', () => {
    expect(parseRepoConfig('')).toEqual(defaultRepoConfig());
    expect(defaultRepoConfig()).toMatchObject({
      allowWorkflowChanges: false,
      limits: { maxFilesChanged: 20, maxLinesChanged: 1000 },
    });
  });

  it.each([
    ['limits:\n  maxTurns: lots\n', 'limits.maxTurns', /`limits\.maxTurns`: .*number/i],
    ['limits:\n  maxTurn: 4\n', 'limits.maxTurn', /`limits\.maxTurn`: unknown setting/],
    ['testComands: [make]\n', 'testComands', /`testComands`: unknown setting/],
    ['allowWorkflowChanges: "yes please"\n', 'allowWorkflowChanges', /`allowWorkflowChanges`: .*boolean/i],
    ['forbiddenPaths: [ok, 3]\n', 'forbiddenPaths.1', /`forbiddenPaths\.1`/],
    ['baseBranch: "bad branch"\n', 'baseBranch', /not a valid branch name/],
    ['baseBranch: "--upload-pack=touch /tmp/x"\n', 'baseBranch', /not a valid branch name/],
    ['baseBranch: "a..b"\n', 'baseBranch', /not a valid branch name/],
  ])('names the bad field in %j', (text, field, msg) => {
    let err: unknown;
    try {
      parseRepoConfig(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RepoConfigError);
    expect((err as RepoConfigError).field).toBe(field);
    expect((err as Error).message).toMatch(msg);
    expect((err as Error).message).toMatch(/^\.github\/frognano\.yml/);
  });

  it('reports YAML syntax errors and non-mapping documents', () => {
    expect(() => parseRepoConfig('limits: [unclosed\n')).toThrow(/is not valid YAML/);
    expect(() => parseRepoConfig('- a\n- b\n')).toThrow(/must be a mapping of settings, not a list/);
    expect(() => parseRepoConfig('a: 1\na: 2\n')).toThrow(/not valid YAML/);
  });

  it('loads from a repository directory, defaulting when the file is absent', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-cfg-'));
    try {
      expect(await loadRepoConfig(dir)).toEqual({ config: defaultRepoConfig(), found: false });
      await fs.mkdir(path.join(dir, '.github'));
      await fs.writeFile(path.join(dir, '.github/frognano.yml'), 'testCommands: [make test]\n');
      const { config, found } = await loadRepoConfig(dir);
      expect(found).toBe(true);
      expect(config.testCommands).toEqual(['make test']);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('.github/frognano.yml: follow-up, setup network, instructions', () => {
  it('reads the conversation settings', () => {
    const cfg = parseRepoConfig(`
setup:
  network: true
publishFailedAttempts: true
followUp:
  maxRounds: 2
approval:
  allowTriggerApproval: true
instructionsFile: docs/bot.md
`);
    expect(cfg).toMatchObject({
      setup: { network: { mode: 'registries', allow: [] } },
      publishFailedAttempts: true,
      followUp: { maxRounds: 2 },
      approval: { allowTriggerApproval: true },
      instructionsFile: 'docs/bot.md',
    });
  });

  it('defaults to no network, no partial pushes, five rounds and the two-person rule', () => {
    expect(defaultRepoConfig()).toMatchObject({
      setup: { network: { mode: 'off', allow: [] }, cache: true, cacheKeyFiles: [] },
      publishFailedAttempts: false,
      followUp: { maxRounds: 5 },
      approval: { allowTriggerApproval: false },
    });
    expect(defaultRepoConfig().instructionsFile).toBeUndefined();
  });

  it.each(['../secrets.md', '/etc/passwd', 'docs/../../x.md', '-rf'])('refuses the instructions path %s', (p) => {
    expect(() => parseRepoConfig(`instructionsFile: '${p}'\n`)).toThrow(
      /`instructionsFile`: not a repository-relative file path/,
    );
  });

  it('names a typo inside the new sections', () => {
    expect(() => parseRepoConfig('setup:\n  networks: true\n')).toThrow(/`setup\.networks`: unknown setting/);
    expect(() => parseRepoConfig('ciFix:\n  maxRound: 2\n')).toThrow(/`ciFix\.maxRound`: unknown setting/);
  });

  it('reads ciFix: on with 3 rounds by default, off or capped when asked', () => {
    expect(defaultRepoConfig().ciFix).toEqual({ enabled: true, maxRounds: 3, settleSeconds: 60 });
    expect(parseRepoConfig('ciFix:\n  enabled: false\n').ciFix).toEqual({
      enabled: false,
      maxRounds: 3,
      settleSeconds: 60,
    });
    expect(parseRepoConfig('ciFix:\n  maxRounds: 1\n').ciFix).toEqual({
      enabled: true,
      maxRounds: 1,
      settleSeconds: 60,
    });
    expect(() => parseRepoConfig('ciFix:\n  maxRounds: -1\n')).toThrow(RepoConfigError);
  });

  it('reads verify: on when there are test commands, with every setting documented', () => {
    expect(verifyEnabled(defaultRepoConfig())).toBe(false);
    expect(verifyEnabled(parseRepoConfig('testCommands: [make test]\n'))).toBe(true);
    expect(verifyEnabled(parseRepoConfig('testCommands: [make test]\nverify:\n  enabled: false\n'))).toBe(false);
    // Scans alone, for a repository without tests.
    expect(verifyEnabled(parseRepoConfig('verify:\n  enabled: true\n'))).toBe(true);
    const cfg = parseRepoConfig(`
verify:
  security: false
  secrets: false
  timeoutMinutes: 12
  reports: ['build/test-results/**/*.xml', junit.xml]
  onFailure: report
  maxRepairRounds: 0
`);
    expect(cfg.verify).toEqual({
      security: false,
      secrets: false,
      timeoutMinutes: 12,
      reports: ['build/test-results/**/*.xml', 'junit.xml'],
      onFailure: 'report',
      maxRepairRounds: 0,
    });
  });

  it.each([
    ['verify:\n  onFailure: fix\n', /`verify\.onFailure`/],
    ['verify:\n  maxRepairRounds: 9\n', /`verify\.maxRepairRounds`/],
    ['verify:\n  timeoutMinutes: 0\n', /`verify\.timeoutMinutes`/],
    ['verify:\n  enable: true\n', /`verify\.enable`: unknown setting/],
    ["verify:\n  reports: ['../outside.xml']\n", /`verify\.reports\.0`: not a repository-relative glob/],
    ["verify:\n  reports: ['/etc/passwd']\n", /`verify\.reports\.0`: not a repository-relative glob/],
  ])('refuses %j', (text, msg) => {
    expect(() => parseRepoConfig(text)).toThrow(msg);
  });
});
