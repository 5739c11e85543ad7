import { parseDocument } from 'yaml';
import { envNamesReadByCode, parseDockerfile, read } from './files.js';

const doc = parseDocument(read('deploy/docker-compose.yml'), { strict: true });
const compose = doc.toJS() as any;
const targets = new Set(parseDockerfile(read('Dockerfile')).stages.map((s) => s.name).filter(Boolean));

describe('docker-compose.yml', () => {
  it('parses and defines redis, app and runner, each with a named image', () => {
    expect(doc.errors).toEqual([]);
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'redis', 'runner']);
    for (const [name, svc] of Object.entries<any>(compose.services)) expect({ name, image: typeof svc.image }).toEqual({ name, image: 'string' });
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
      for (const k of Object.keys(svc.environment ?? {})) expect(k).not.toMatch(/^(PRIVATE_KEY|WEBHOOK_SECRET|.*TOKEN|.*API_KEY)$/);
    }
  });

  it('gives the runner an NVIDIA GPU, the model directory, and the Docker engine with the work dir at the same path', () => {
    const runner = compose.services.runner;
    const devices = runner.deploy.resources.reservations.devices;
    expect(devices).toEqual([expect.objectContaining({ driver: 'nvidia', capabilities: ['gpu'] })]);
    const volumes = runner.volumes as string[];
    const model = volumes.find((v) => /:\/models(:ro)?$/.test(v));
    expect(model).toMatch(/:ro$/);
    expect(runner.environment.FROGNANO_MODEL_DIR.startsWith('/models/')).toBe(true);
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
        if (k.startsWith('FROGNANO_') || k === 'REDIS_URL') expect({ k, read: known.has(k) }).toEqual({ k, read: true });
      }
    }
  });
});
