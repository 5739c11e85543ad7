/**
 * The Hugging Face Hub's file API, as `frognano model pull` reads it: the file list of one revision of a model
 * repository (`GET /api/models/<repo>/tree/<rev>?recursive=true`, paged by `Link: rel="next"`) and each file's
 * download URL (`/<repo>/resolve/<rev>/<path>`, which redirects to the CDN). HF_ENDPOINT replaces
 * https://huggingface.co (mirrors, the tests' loopback stand-in); HF_TOKEN is sent as a bearer token. A dataset
 * repository is read the same way under `/api/datasets/<repo>/tree/…` and `/datasets/<repo>/resolve/…` (`frognano
 * eval --dataset owner/name`).
 */
import { setupError } from '../exitCodes.js';

/** Where the published weights are: the Hub repository that Microsoft's FrogNano-4B release is under. */
export const DEFAULT_MODEL_REPO = 'microsoft/FrogNano-4B-2609';
export const DEFAULT_ENDPOINT = 'https://huggingface.co';

export interface HubFile {
  path: string;
  size: number;
  /** The content's checksum and how to compute it: LFS files carry sha256, small files their git blob sha1. */
  checksum: { kind: 'sha256' | 'git-sha1'; hex: string };
}

export interface HubRepo {
  endpoint: string;
  repo: string;
  revision: string;
  token?: string;
  /** A model repository (the default) or a dataset repository: the API and download paths differ. */
  kind?: 'model' | 'dataset';
}

const MAX_PAGES = 50;
const MAX_FILES = 2000;
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function hubRepoFromEnv(
  env: NodeJS.ProcessEnv,
  repo: string,
  revision: string,
  kind: 'model' | 'dataset' = 'model',
): HubRepo {
  const endpoint = (env.HF_ENDPOINT?.trim() || DEFAULT_ENDPOINT).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(endpoint)) {
    throw setupError(`HF_ENDPOINT must be an http(s) URL, got "${endpoint}"`, 'unset it to use https://huggingface.co');
  }
  if (!/^[\w.-]+\/[\w.-]+$/.test(repo)) throw setupError(`not a Hub repository name: "${repo}" (owner/name)`);
  const token = env.HF_TOKEN?.trim() || undefined;
  return { endpoint, repo, revision, token, kind };
}

export function authHeaders(hub: HubRepo): Record<string, string> {
  return hub.token ? { authorization: `Bearer ${hub.token}` } : {};
}

/** A path the Hub listed, accepted only as plain relative segments: it becomes a file name on this machine. */
export function safeRelativePath(p: string): string {
  const parts = p.split('/');
  if (parts.length > 8 || !parts.every((s) => SEGMENT.test(s) && s !== '..' && s.length <= 200)) {
    throw setupError(`the Hub listed a file name frognano will not write: ${JSON.stringify(p.slice(0, 200))}`);
  }
  return parts.join('/');
}

export function resolveUrl(hub: HubRepo, file: string): string {
  const encoded = file.split('/').map(encodeURIComponent).join('/');
  const where = hub.kind === 'dataset' ? `datasets/${hub.repo}` : hub.repo;
  return `${hub.endpoint}/${where}/resolve/${encodeURIComponent(hub.revision)}/${encoded}`;
}

/** Why a Hub request failed, in words a user can act on. */
export function hubStatusError(hub: HubRepo, status: number, what: string): Error {
  const hint =
    status === 401 || status === 403
      ? hub.token
        ? 'HF_TOKEN was sent and refused: check it has read access to the repository (and that its licence is accepted)'
        : 'the repository needs a Hugging Face token: export HF_TOKEN=hf_...'
      : status === 404
        ? hub.kind === 'dataset'
          ? `check the dataset ${hub.repo} exists on ${hub.endpoint} (--dataset owner/name)`
          : `check the repository (--repo) and revision (--revision) exist on ${hub.endpoint}`
        : 'try again; the download resumes where it stopped';
  return setupError(`the Hub answered ${status} for ${what}`, hint);
}

interface TreeEntry {
  type?: string;
  path?: string;
  size?: number;
  oid?: string;
  lfs?: { oid?: string; size?: number };
}

function toHubFile(e: TreeEntry): HubFile | undefined {
  if (e.type !== 'file' || typeof e.path !== 'string') return undefined;
  const path = safeRelativePath(e.path);
  if (e.lfs?.oid && /^[0-9a-f]{64}$/.test(e.lfs.oid)) {
    return { path, size: Number(e.lfs.size ?? e.size), checksum: { kind: 'sha256', hex: e.lfs.oid } };
  }
  if (!e.oid || !/^[0-9a-f]{40}$/.test(e.oid)) throw setupError(`the Hub listed ${path} without a checksum`);
  return { path, size: Number(e.size), checksum: { kind: 'git-sha1', hex: e.oid } };
}

function nextPage(link: string | null): string | undefined {
  return link?.match(/<([^>]+)>\s*;\s*rel="next"/)?.[1];
}

/** Every file of the revision, with size and checksum. */
export async function listHubFiles(hub: HubRepo, signal?: AbortSignal): Promise<HubFile[]> {
  const files: HubFile[] = [];
  let url: string | undefined =
    `${hub.endpoint}/api/${hub.kind === 'dataset' ? 'datasets' : 'models'}/${hub.repo}/tree/${encodeURIComponent(hub.revision)}?recursive=true`;
  for (let page = 0; url && page < MAX_PAGES; page++) {
    let res: Response;
    try {
      res = await fetch(url, { headers: authHeaders(hub), signal: signal ?? AbortSignal.timeout(60_000) });
    } catch (err) {
      throw setupError(
        `cannot reach the Hub at ${hub.endpoint} (${(err as Error).message})`,
        'check the network or HF_ENDPOINT',
      );
    }
    if (!res.ok) throw hubStatusError(hub, res.status, `the file list of ${hub.repo}@${hub.revision}`);
    const entries = (await res.json()) as TreeEntry[];
    if (!Array.isArray(entries)) throw setupError(`the Hub's file list of ${hub.repo} is not a list`);
    for (const e of entries) {
      const f = toHubFile(e);
      if (f) files.push(f);
    }
    if (files.length > MAX_FILES)
      throw setupError(`${hub.repo} lists more than ${MAX_FILES} files; not a ${hub.kind ?? 'model'} repository?`);
    url = nextPage(res.headers.get('link'));
  }
  if (files.length === 0) throw setupError(`${hub.repo}@${hub.revision} has no files`);
  return files;
}
