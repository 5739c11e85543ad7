import { parseDocument } from 'yaml';
import { envNamesReadByCode, parseDockerfile, read } from './files.js';

const doc = parseDocument(read('deploy/docker-compose.yml'), { strict: true });
const compose = doc.toJS() as any;
const targets = new Set(
  parseDockerfile(read('Dockerfile'))
    .stages.map((s) => s.name)
    .filter(Boolean),
);

describe('docker-compose.yml', () => {
  it('parses and defines redis, app, runner and the vllm model server, each with a named image', () => {
    expect(doc.errors).toEqual([]);
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'redis', 'runner', 'vllm']);
    for (const [name, svc] of Object.entries<any>(compose.services))
      expect({ name, image: typeof svc.image }).toEqual({ name, image: 'string' });
  });

  it('keeps Redis durable: append-only file on a named volume, no eviction, health-checked', () => {
    const redis = compose.services.redis;
    expect(redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes', '--maxmemory-policy', 'noeviction']));
    const vol = (redis.volumes as string[]).find((v) => v.endsWith(':/data'))!;
    expect(Object.keys(compose.volumes)).toContain(vol.split(':')[0]);
    expect(redis.healthcheck.test).toContain('ping');
    for (const s of ['app', 'runner']) expect(compose.services[s].depends_on.redis.condition).toBe('service_healthy');
  });

  it('runs app and runner as a non-root user with no capabilities and no privilege gain', () => {
    for (const s of ['app', 'runner']) {
      const svc = compose.services[s];
      expect(svc.user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
      expect(svc.cap_drop).toEqual(['ALL']);
      expect(svc.security_opt).toContain('no-new-privileges:true');
    }
  });

  it('builds app and runner from Dockerfile targets that exist', () => {
    for (const s of ['app', 'runner']) {
      const build = compose.services[s].build;
      expect(build.context).toBe('..');
      expect(targets.has(build.target)).toBe(true);
    }
  });

  it('gives the app its webhook port, .env and the private key as a secret file, never inline', () => {
    const app = compose.services.app;
    expect(app.ports.some((p: string) => p.endsWith(':3000'))).toBe(true);
    expect(app.env_file).toContain('../.env');
    expect(app.secrets).toContain('github_app_private_key');
    expect(app.environment.PRIVATE_KEY_PATH).toBe('/run/secrets/github_app_private_key');
    expect(app.environment.HOST).toBe('0.0.0.0');
    expect(compose.secrets.github_app_private_key.file).toMatch(/\.pem$/);
    for (const svc of Object.values<any>(compose.services)) {
      for (const k of Object.keys(svc.environment ?? {}))
        expect(k).not.toMatch(/^(PRIVATE_KEY|WEBHOOK_SECRET|.*TOKEN|.*API_KEY)$/);
    }
  });

  it('gives the vLLM server the GPU, the checkpoint read-only, and the flags FrogNano needs', () => {
    const vllm = compose.services.vllm;
    expect(vllm.image).toMatch(/^vllm\/vllm-openai:v\d+\.\d+\.\d+$/);
    expect(vllm.deploy.resources.reservations.devices).toEqual([
      expect.objectContaining({ driver: 'nvidia', capabilities: ['gpu'] }),
    ]);
    expect((vllm.volumes as string[]).find((v) => /:\/models(:ro)?$/.test(v))).toMatch(/:ro$/);
    const flags = (vllm.command as string[]).join(' ');
    for (const f of [
      '--enable-prefix-caching',
      '--enable-auto-tool-choice',
      '--tool-call-parser qwen3_coder',
      '--reasoning-parser qwen3',
      '--enable-prompt-tokens-details',
    ]) {
      expect(flags).toContain(f);
    }
    const arg = (name: string) => vllm.command[vllm.command.indexOf(name) + 1];
    expect(arg('--model')).toMatch(/^\/models\//);
    expect(Number(arg('--max-model-len'))).toBe(65536); // upstream Leaf's max_context_tokens
    expect(vllm.healthcheck.test.join(' ')).toContain('/health');
    expect(vllm.healthcheck.start_period).toBeDefined();
  });

  it('points the runner at the server by its served name, with several loops sharing it, and the Docker engine with the work dir at the same path', () => {
    const runner = compose.services.runner;
    const vllm = compose.services.vllm;
    expect(runner.deploy).toBeUndefined(); // the GPU belongs to the server
    expect(runner.environment.FROGNANO_BACKEND).toBe('openai');
    expect(runner.environment.FROGNANO_OPENAI_BASE_URL).toBe(`http://vllm:${vllm.expose[0]}/v1`);
    expect(runner.environment.FROGNANO_OPENAI_MODEL).toBe(
      vllm.command[vllm.command.indexOf('--served-model-name') + 1],
    );
    expect(Number(runner.environment.FROGNANO_CONCURRENCY)).toBeGreaterThan(1);
    expect(Number(runner.environment.FROGNANO_CONCURRENCY)).toBeLessThanOrEqual(
      Number(vllm.command[vllm.command.indexOf('--max-num-seqs') + 1]),
    );
    expect(runner.depends_on.vllm.condition).toBe('service_healthy');
    const volumes = runner.volumes as string[];
    expect(volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    const work = runner.environment.FROGNANO_WORK_DIR;
    expect(volumes).toContain(`${work}:${work}`);
    expect(runner.environment.FROGNANO_SANDBOX).toBe('docker');
    expect(runner.stop_grace_period).toBeDefined();
  });

  it('sets only FROGNANO_* variables the code reads', () => {
    const known = envNamesReadByCode();
    for (const svc of Object.values<any>(compose.services)) {
      for (const k of Object.keys(svc.environment ?? {})) {
        if (k.startsWith('FROGNANO_') || k === 'REDIS_URL')
          expect({ k, read: known.has(k) }).toEqual({ k, read: true });
      }
    }
  });
});
