import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { ObjectStore } from './objectStore.js';

export interface S3StoreOptions {
  bucket: string;
  /** Key prefix inside the bucket (`frognano/`), so a bucket can be shared. */
  prefix?: string;
  /** An S3-compatible server (MinIO, Ceph, R2, ...); unset for AWS itself. */
  endpoint?: string;
  region?: string;
  /** Unset: the SDK's default chain (AWS_ACCESS_KEY_ID/..., a web identity, an instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Path-style URLs (most S3-compatible servers need them); default true when an endpoint is given. */
  forcePathStyle?: boolean;
}

/**
 * Objects in an S3-API bucket: for an app and runners on many nodes. Retention is best left to a bucket
 * lifecycle rule (docs/trajectory-pages.md); `deleteOlderThan` does the same sweep for servers without one.
 */
export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  readonly sweepsItself = false;
  private readonly client: S3Client;
  private readonly prefix: string;

  constructor(private readonly o: S3StoreOptions) {
    this.prefix = o.prefix ? `${o.prefix.replace(/\/+$/, '')}/` : '';
    this.description = `s3://${o.bucket}/${this.prefix}${o.endpoint ? ` at ${o.endpoint}` : ''}`;
    this.client = new S3Client({
      region: o.region ?? 'us-east-1',
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      ...(o.credentials ? { credentials: o.credentials } : {}),
      forcePathStyle: o.forcePathStyle ?? Boolean(o.endpoint),
      // Checksums only where S3 requires them: several S3-compatible servers refuse the newer checksum headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(key: string, body: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.o.bucket,
        Key: this.prefix + key,
        Body: body,
        ContentType: 'application/json',
      }),
    );
  }

  async get(key: string): Promise<string | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.o.bucket, Key: this.prefix + key }));
      return (await out.Body?.transformToString('utf8')) ?? null;
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
      throw err;
    }
  }

  private async *objects(prefix: string): AsyncGenerator<{ key: string; modified?: Date }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.o.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
      );
      for (const c of page.Contents ?? [])
        if (c.Key) yield { key: c.Key.slice(this.prefix.length), modified: c.LastModified };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.objects(prefix)) out.push(o.key);
    return out;
  }

  async deleteOlderThan(cutoff: Date): Promise<number> {
    let removed = 0;
    for await (const o of this.objects('')) {
      if (o.modified && o.modified < cutoff) {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.o.bucket, Key: this.prefix + o.key }));
        removed++;
      }
    }
    return removed;
  }

  destroy(): void {
    this.client.destroy();
  }
}
