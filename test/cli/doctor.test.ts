import { generateKeyPairSync } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { checkGitHubApp } from '../../src/cli/doctor/githubApp.js';
import { checkScanners } from '../../src/cli/doctor/scanners.js';
import { checkRedis } from '../../src/cli/doctor/system.js';
import { maskUrlPassword } from '../../src/util/redact.js';
import { cleanEnv, runFrognano, tempDir } from './helpers.js';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

let work: string;
beforeAll(async () => {
  work = await tempDir('doctor');
});
afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('frognano doctor (subprocess)', () => {
  test('with Redis up and bwrap chosen: one line per check, exit 0', async () => {
    const r = await runFrognano(['doctor', '--sandbox', 'bwrap'], { env: cleanEnv({ REDIS_URL }) });
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^✓ Node\.js\s+v20\.\d+\.\d+ \(needs >=20\.19\)$/);
    expect(lines).toContainEqual(expect.stringMatching(/^✓ Redis\s+PONG from Redis \d+\.\d+\.\d+ at redis:\/\//));
    // Whether runners are registered depends on what else uses this Redis (a runner test in this jest worker leaves
    // one, named `runner-<hash>` by publicRunnerName); the line is there either way.
    expect(lines).toContainEqual(
      expect.stringMatching(/^(✓ Runners\s+\d+ registered: runner\S* \(|! Runners\s+none registered in this Redis$)/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^✓ bwrap sandbox\s+bubblewrap works/));
    // .ci/run installs the ESLint bundle (scripts/install-scanners.sh); the host's /usr/bin/node is what bwrap sees.
    expect(lines).toContainEqual(expect.stringMatching(/^✓ Scanners\s+ESLint 9\.39\.\d+ bundle \(.*\), node v\d+/));
    expect(lines).toContainEqual(expect.stringMatching(/^! Model\s+no model configured$/));
    expect(lines).toContainEqual(expect.stringMatching(/^! GitHub App\s+not configured/));
    expect(r.stdout).toMatch(/All required checks passed \([23] warnings\)\.\n$/);
  });

  test('with a bad REDIS_URL: a ✗ line with the cause and a hint, exit 1', async () => {
    const r = await runFrognano(['doctor', '--sandbox', 'bwrap'], {
      env: cleanEnv({ REDIS_URL: 'redis://127.0.0.1:1' }),
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^✗ Redis\s+cannot reach redis:\/\/127\.0\.0\.1:1: connect ECONNREFUSED 127\.0\.0\.1:1$/m);
    expect(r.stdout).toMatch(/^\s+→ check REDIS_URL/m);
    expect(r.stdout).not.toContain('Runners');
    expect(r.stdout).toMatch(/1 required check failed: Redis\.\n$/);
  });

  test('--json, a missing model directory and a broken App key', async () => {
    const r = await runFrognano(['doctor', '--sandbox', 'bwrap', '--model-dir', path.join(work, 'missing'), '--json'], {
      env: cleanEnv({ REDIS_URL, APP_ID: '123', WEBHOOK_SECRET: 's3cret', PRIVATE_KEY: 'not a key' }),
    });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    const byName = Object.fromEntries(report.checks.map((c: { name: string }) => [c.name, c]));
    expect(byName.Model).toMatchObject({ status: 'fail', required: true });
    expect(byName.Model.detail).toContain(`model directory ${path.join(work, 'missing')} does not exist`);
    expect(byName['GitHub App']).toMatchObject({ status: 'fail' });
    expect(byName['GitHub App'].detail).toMatch(/private key from PRIVATE_KEY does not parse/);
    expect(r.stdout).not.toContain('s3cret');
  });

  test('a real (tiny) ONNX model directory loads and generates one token', async () => {
    const { buildTinyModel } = await import('../support/tinyModel/buildTinyModel.js');
    const dir = path.join(work, 'tiny-model');
    await buildTinyModel(dir);
    const r = await runFrognano(['doctor', '--sandbox', 'bwrap', '--model-dir', dir], { env: cleanEnv({ REDIS_URL }) });
    expect(r.stdout).toMatch(
      // formatDuration: "4.2s" under ten seconds, "0m15s" above (a loaded machine takes that long).
      new RegExp(`^✓ Model\\s+ONNX model in ${dir}: loaded in (?:[\\d.]+s|\\d+m\\d\\ds), generated 1 token in`, 'm'),
    );
    expect(r.stdout).toContain('; decoder model.onnx (fp32), chat template from tokenizer_config.json');
    expect(r.code).toBe(0);
  });

  test('a Qwen3.5 hub export: the decoder, embed file, dtype and template source it picked', async () => {
    const dir = path.resolve('test/fixtures/qwen35-tiny');
    const r = await runFrognano(['doctor', '--sandbox', 'bwrap'], {
      env: cleanEnv({ REDIS_URL, FROGNANO_MODEL_DIR: dir, FROGNANO_ONNX_DTYPE: 'fp16' }),
    });
    expect(r.stdout).toContain(
      '; decoder onnx/decoder_model_merged_fp16.onnx + onnx/embed_tokens_fp16.onnx (fp16), chat template from chat_template.jinja',
    );
    const bad = await runFrognano(['doctor', '--sandbox', 'bwrap'], {
      env: cleanEnv({ REDIS_URL, FROGNANO_MODEL_DIR: dir, FROGNANO_ONNX_DTYPE: 'q4f16' }),
    });
    expect(bad.stdout).toMatch(/✗ Model\s+ONNX model in .*: no q4f16 decoder graph .*available dtypes: fp32, fp16, q4/);
  });

  test('an unknown option is a usage error', async () => {
    const r = await runFrognano(['doctor', '--verbose']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Usage: frognano doctor');
  });
});

describe('doctor checks (in process)', () => {
  test('Scanners: a bundle not installed, or no node the bwrap sandbox sees, is a warning saying what to do', async () => {
    const ok = await checkScanners();
    expect(ok).toMatchObject({ status: 'ok', required: false });
    await fs.mkdir(path.join(work, 'scanners', 'eslint'), { recursive: true });
    await fs.copyFile('runner/scanners/eslint/package.json', path.join(work, 'scanners', 'eslint', 'package.json'));
    const missing = await checkScanners(path.join(work, 'scanners'));
    expect(missing).toMatchObject({ status: 'warn', hint: 'run scripts/install-scanners.sh' });
    expect(missing.detail).toMatch(/^ESLint bundle: not installed; /);
    const noNode = await checkScanners(undefined, [path.join(work, 'scanners')]);
    expect(noNode).toMatchObject({ status: 'warn' });
    expect(noNode.detail).toContain('no node in /usr or /bin');
  });

  test('Redis: an unreachable REDIS_URL fails without showing its password', async () => {
    const unreachable = await checkRedis({ REDIS_URL: 'redis://:hunter2-password@127.0.0.1:1' }, 1000);
    expect(unreachable.status).toBe('fail');
    expect(unreachable.detail).not.toContain('hunter2');
    expect(maskUrlPassword('redis://user:pw@host:6379/2')).toBe('redis://user:***@host:6379/2');
    const ok = await checkRedis({ REDIS_URL }, 2000);
    expect(ok.status).toBe('ok');
  });

  describe('GitHub App credentials', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

    test('a real key in PRIVATE_KEY (as is, with \\n escapes, or base64) passes', async () => {
      for (const PRIVATE_KEY of [pem, pem.replace(/\n/g, '\\n'), Buffer.from(pem).toString('base64')]) {
        const r = await checkGitHubApp({ APP_ID: '4242', WEBHOOK_SECRET: 'x', PRIVATE_KEY });
        expect(r).toMatchObject({
          status: 'ok',
          detail: 'APP_ID 4242, RSA key (2048 bits) from PRIVATE_KEY, WEBHOOK_SECRET set',
        });
        expect(r.detail).not.toContain('BEGIN');
      }
    });

    test('PRIVATE_KEY_PATH is read relative to the working directory', async () => {
      await fs.writeFile(path.join(work, 'app.pem'), pem);
      const ok = await checkGitHubApp({ APP_ID: '1', WEBHOOK_SECRET: 'x', PRIVATE_KEY_PATH: 'app.pem' }, work);
      expect(ok.status).toBe('ok');
      const missing = await checkGitHubApp({ APP_ID: '1', WEBHOOK_SECRET: 'x', PRIVATE_KEY_PATH: 'gone.pem' }, work);
      expect(missing.status).toBe('fail');
      expect(missing.detail).toContain(`PRIVATE_KEY_PATH ${path.join(work, 'gone.pem')} cannot be read (ENOENT)`);
    });

    test('a partial setup fails listing every problem; nothing set is a warning', async () => {
      const r = await checkGitHubApp({ APP_ID: 'my-app', PRIVATE_KEY: pem });
      expect(r.status).toBe('fail');
      expect(r.detail).toBe("APP_ID must be the App's numeric id, got 'my-app'; WEBHOOK_SECRET is not set");
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString();
      expect((await checkGitHubApp({ APP_ID: '1', WEBHOOK_SECRET: 'x', PRIVATE_KEY: ec })).detail).toMatch(
        /GitHub App keys are RSA/,
      );
      expect((await checkGitHubApp({})).status).toBe('warn');
    });
  });
});
