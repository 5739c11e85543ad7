import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for github.com and its API on 127.0.0.1, real HTTP so a browser follows its redirects:
 * /login/oauth/authorize signs in as `signInAs` at once, /login/oauth/access_token swaps the code for a token,
 * /user names the token's user, and the permission endpoint answers from `roles` (with the installation token only).
 */
export interface FakeGitHub {
  url: string;
  signInAs: string;
  roles: Record<string, string>;
  /** Every permission request, as `owner/repo/login`. */
  permissionAsks: string[];
  close(): Promise<void>;
}

export const CLIENT_ID = 'Iv1.testclient';
export const CLIENT_SECRET = 'test-client-secret-value';
export const INSTALLATION_TOKEN = 'ghs_installationtoken0123456789abcdef';

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

export async function startFakeGitHub(): Promise<FakeGitHub> {
  const codes = new Map<string, string>();
  const tokens = new Map<string, string>();
  let n = 0;
  const fake: FakeGitHub = { url: '', signInAs: 'alice', roles: {}, permissionAsks: [], close: async () => undefined };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, v: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (url.pathname === '/login/oauth/authorize') {
      if (url.searchParams.get('client_id') !== CLIENT_ID) return json(400, { error: 'bad client' });
      const code = `code${++n}`;
      codes.set(code, fake.signInAs);
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return res.writeHead(302, { location: back.toString() }).end();
    }
    if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
      const b = JSON.parse(await body(req)) as Record<string, string>;
      const user = codes.get(b.code ?? '');
      codes.delete(b.code ?? '');
      if (b.client_id !== CLIENT_ID || b.client_secret !== CLIENT_SECRET || !user)
        return json(200, { error: 'bad_verification_code' });
      const token = `ghu_user${++n}`;
      tokens.set(token, user);
      return json(200, { access_token: token, token_type: 'bearer' });
    }
    if (url.pathname === '/user') {
      const user = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      return user ? json(200, { login: user, id: 1 }) : json(401, { message: 'Bad credentials' });
    }
    const perm = /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/.exec(url.pathname);
    if (perm) {
      if (req.headers.authorization !== `token ${INSTALLATION_TOKEN}`) return json(401, { message: 'Bad credentials' });
      fake.permissionAsks.push(`${perm[1]}/${perm[2]}/${perm[3]}`);
      const role = fake.roles[perm[3]!];
      if (!role) return json(404, { message: 'Not Found' });
      return json(200, {
        permission: role === 'maintain' || role === 'triage' ? 'write' : role,
        role_name: role,
        user: { login: perm[3] },
      });
    }
    json(404, { message: 'Not Found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}
