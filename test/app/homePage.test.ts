import { describe, expect, test } from '@jest/globals';
import { renderHomePage, type HomePageFacts } from '../../src/app/homePage.js';

const facts: HomePageFacts = {
  appId: 4711,
  webhookPath: '/api/github/webhooks',
  secretSet: false,
  label: 'frognano',
  identity: () => Promise.reject(new Error('unused')),
  redisProblem: () => Promise.resolve(undefined),
};

describe('the / page once registered', () => {
  test('GitHub not answering and Redis down: what is known, and what to fix', () => {
    const html = renderHomePage(facts, 'no answer within 5 s', 'Redis unreachable: connection refused');
    const text = html.replace(/<[^>]+>/g, '');
    expect(text).toContain('GitHub App: id 4711 (GitHub did not say more: no answer within 5 s)');
    expect(text).toContain('webhook secret not set: set WEBHOOK_SECRET');
    expect(text).toContain('Redis: not reachable: Redis unreachable: connection refused (set REDIS_URL)');
    expect(text).toContain('Webhook channel: none');
    expect(html).toContain('href="/readyz"');
  });

  test('names from GitHub are escaped, the channel is named', () => {
    const identity = {
      slug: 'x',
      name: '<script>alert(1)</script>',
      htmlUrl: 'https://github.com/apps/x"onmouseover="y',
    };
    const html = renderHomePage({ ...facts, secretSet: true, channel: 'https://smee.io/abc' }, identity);
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('href="https://github.com/apps/x&quot;onmouseover=&quot;y/installations/new"');
    expect(html.replace(/<[^>]+>/g, '')).toContain(
      'Webhook channel: https://smee.io/abc, forwarded to /api/github/webhooks',
    );
  });
});
