/** The server's base URL in the three forms the backend needs: to call, to show, and its root (without `/v1`). */

export interface ServerUrls {
  /** Up to and including `/v1`, without user:password (fetch refuses credentials in URLs). */
  baseUrl: string;
  /** The base URL without user:password or query, for messages. */
  displayUrl: string;
  /** The server root, without `/v1`: where vLLM's /tokenize and llama.cpp's /props live. */
  rootUrl: string;
  /** From `http://user:pass@host/v1`: sent as a Basic authorization header. */
  basicAuth?: string;
}

export function serverUrls(configured: string): ServerUrls {
  const { url, basicAuth } = splitCredentials(configured.replace(/\/+$/, ''));
  return { baseUrl: url, displayUrl: displayUrl(url), rootUrl: url.replace(/\/v1$/, ''), basicAuth };
}

function splitCredentials(url: string): { url: string; basicAuth?: string } {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return { url };
    const basicAuth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString(
      'base64',
    );
    u.username = '';
    u.password = '';
    return { url: u.toString().replace(/\/+$/, ''), basicAuth };
  } catch {
    return { url };
  }
}

function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    return u.toString().replace(/\/+$/, '');
  } catch {
    return '(invalid base URL)';
  }
}
