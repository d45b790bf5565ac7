import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

/**
 * A real S3-speaking server on loopback (s3rver, files in a temporary folder) with one bucket,
 * for the S3 media store. Its credentials are s3rver's own, set where the AWS SDK looks first
 * (the environment of this test process), as an operator's would be.
 */
export interface TestS3 {
  readonly endpoint: string;
  readonly bucket: string;
  /** The settings that point Parley's media store at it. */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

export async function startS3(bucket = 'parley-media'): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), 'parley-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = (await server.run()) as { port: number };
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: {
      PARLEY_MEDIA_STORE: 's3',
      PARLEY_MEDIA_S3_BUCKET: bucket,
      PARLEY_MEDIA_S3_ENDPOINT: endpoint,
      PARLEY_MEDIA_S3_REGION: 'us-east-1',
      PARLEY_MEDIA_S3_FORCE_PATH_STYLE: 'true',
    },
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
