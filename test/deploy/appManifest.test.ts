import { readFileSync } from 'node:fs';
import { parse, parseDocument, isSeq, isScalar } from 'yaml';

/** app.yml asks for what the CI-fix loop reads (docs/ci-fix.md), and says for each event what it is for. */
describe('app.yml', () => {
  const text = readFileSync('app.yml', 'utf8');
  const manifest = parse(text) as { default_events: string[]; default_permissions: Record<string, string> };

  it('subscribes to the four events that say CI finished', () => {
    expect(manifest.default_events).toEqual(
      expect.arrayContaining(['check_suite', 'check_run', 'workflow_run', 'status']),
    );
  });

  it('asks for actions: read, statuses: read and checks (write covers read)', () => {
    expect(manifest.default_permissions).toMatchObject({ actions: 'read', statuses: 'read', checks: 'write' });
  });

  it('says what each event and permission is for, on its line', () => {
    const doc = parseDocument(text);
    const events = doc.get('default_events');
    expect(isSeq(events)).toBe(true);
    for (const item of isSeq(events) ? events.items : []) {
      expect(isScalar(item) && (item.comment ?? '').trim().length).toBeGreaterThan(10);
    }
    for (const name of Object.keys(manifest.default_permissions)) {
      expect(text).toMatch(new RegExp(`^  ${name}: \\w+ +# .{10,}$`, 'm'));
    }
  });
});
