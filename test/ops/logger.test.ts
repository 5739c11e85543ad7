import { Writable } from 'node:stream';
import { createLogger, scrubLine, withJob } from '../../src/ops/logger.js';
import { forgetSecret, registerSecret } from '../../src/util/redact.js';

/** Collects what the logger writes, one parsed JSON object per line. */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  const log = createLogger({ destination: stream, level: 'debug', name: 'test' });
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const GH_TOKEN = 'ghs_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyz\nabc123\n-----END RSA PRIVATE KEY-----';

describe('ops logger', () => {
  it('scrubs tokens from messages, interpolation values and nested string fields', () => {
    const { log, lines, parsed } = capture();
    log.info(`cloning with ${GH_TOKEN}`);
    log.info('pushing to %s', `https://x-access-token:${GH_TOKEN}@github.com/o/r.git`);
    log.warn(
      { job: { remote: `https://user:hunter2hunter2@example.com/r.git`, list: [`Bearer ${GH_TOKEN}`] } },
      'nested',
    );
    log.error({ key: PEM }, 'pem in a field');
    const all = lines.join('\n');
    expect(all).not.toContain(GH_TOKEN);
    expect(all).not.toContain('hunter2hunter2');
    expect(all).not.toContain('MIIEowIBAAKCAQEAxyz');
    const [a, b, c, d] = parsed();
    expect(a.msg).toBe('cloning with [REDACTED]');
    expect(b.msg).toBe('pushing to https://[REDACTED]@github.com/o/r.git');
    expect((c.job as { remote: string }).remote).toBe('https://[REDACTED]@example.com/r.git');
    expect(d.key).toBe('[REDACTED]');
    // Ordinary text is untouched.
    expect(c.msg).toBe('nested');
  });

  it('censors fields named like secrets whatever their value, but not counters that merely mention tokens', () => {
    const { log, parsed } = capture();
    log.info(
      {
        token: 'short',
        privateKey: 'not-a-pem-but-secret',
        headers: { authorization: 'Basic dXNlcjpwYXNz', accept: 'application/json' },
        config: { apiKey: 'sk-local-123', baseUrl: 'http://vllm:8000/v1' },
        completionTokens: 812,
        maxNewTokens: 8192,
      },
      'request',
    );
    const [line] = parsed();
    expect(line.token).toBe('[REDACTED]');
    expect(line.privateKey).toBe('[REDACTED]');
    expect((line.headers as Record<string, string>).authorization).toBe('[REDACTED]');
    expect((line.headers as Record<string, string>).accept).toBe('application/json');
    expect((line.config as Record<string, string>).apiKey).toBe('[REDACTED]');
    expect((line.config as Record<string, string>).baseUrl).toBe('http://vllm:8000/v1');
    expect(line.completionTokens).toBe(812);
    expect(line.maxNewTokens).toBe(8192);
  });

  it('scrubs registered secret values and the message and stack of logged errors', () => {
    const secret = 'plain-looking-installation-secret-9f8e7d';
    registerSecret(secret);
    try {
      const { log, lines, parsed } = capture();
      const err = new Error(`git push failed for https://x-access-token:${GH_TOKEN}@github.com/o/r (${secret})`);
      log.error({ err }, 'push failed');
      log.error(err);
      log.info(`value ${secret} in text`);
      const all = lines.join('\n');
      expect(all).not.toContain(secret);
      expect(all).not.toContain(GH_TOKEN);
      const [first, second, third] = parsed();
      const e = first.err as { message: string; stack: string; type: string };
      expect(e.type).toBe('Error');
      expect(e.message).toContain('git push failed');
      expect(e.message).toContain('[REDACTED]');
      expect(e.stack).toContain('push failed');
      expect(second.msg).toContain('[REDACTED]');
      expect(third.msg).toBe('value [REDACTED] in text');
    } finally {
      forgetSecret(secret);
    }
  });

  it('withJob puts the job id on every line, child bindings scrubbed too', () => {
    const { log, parsed } = capture();
    const jobLog = withJob(log, 'octo/hello#7@1', { remote: `https://x:${GH_TOKEN}@github.com/a/b` });
    jobLog.info('turn 1');
    jobLog.child({ tool: 'Bash' }).debug('tool started');
    const [a, b] = parsed();
    expect(a.jobId).toBe('octo/hello#7@1');
    expect(b.jobId).toBe('octo/hello#7@1');
    expect(b.tool).toBe('Bash');
    expect(JSON.stringify([a, b])).not.toContain(GH_TOKEN);
  });

  it('survives circular and very deep objects', () => {
    const { log, parsed } = capture();
    const loop: Record<string, unknown> = { name: 'loop' };
    loop.self = loop;
    let deep: Record<string, unknown> = { leaf: GH_TOKEN };
    for (let i = 0; i < 20; i++) deep = { deeper: deep };
    log.info({ loop, deep }, 'odd shapes');
    const [line] = parsed();
    expect((line.loop as Record<string, unknown>).self).toBe('[Circular]');
    expect(JSON.stringify(line)).not.toContain(GH_TOKEN);
  });

  it('the final line pass never turns valid JSON into invalid JSON', () => {
    // A URL pattern could match across two fields of one line; such a line is left as the field pass wrote it.
    const line = '{"a":"http://host:8080","b":"x@y"}\n';
    expect(() => JSON.parse(scrubLine(line))).not.toThrow();
    const withToken = `{"k${GH_TOKEN}":1}\n`;
    expect(scrubLine(withToken)).toBe('{"k[REDACTED]":1}\n');
    // Both at once: the URL pattern would break the line, the token is still removed.
    const both = `{"a":"http://host:8080","b":"x@y","c${GH_TOKEN}":1}\n`;
    const out = scrubLine(both);
    expect(() => JSON.parse(out)).not.toThrow();
    expect(out).not.toContain(GH_TOKEN);
  });
});
