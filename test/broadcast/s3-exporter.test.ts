import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import type { ExportContext } from '../../src/broadcast/destination-type.js';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { objectKey, type S3Config, s3Destination } from '../../src/broadcast/exporters/s3.js';
import {
  exportContext,
  type FakeReceiver,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

const ACCESS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const BUCKET = 'trace-archive';
const REGION = 'eu-west-1';
/** exportContext's clock: the signing time S3 compares with its own. */
const NOW = '20261122T100002Z';
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;
/** The fake bucket's objects, by key. */
const objects = new Map<string, string>();

before(async () => {
  receiver = await startReceiver();
});
beforeEach(() => {
  objects.clear();
  receiver.requests.length = 0;
  receiver.reply = fakeS3();
});
after(async () => {
  await receiver.close();
  await http.close();
});

function config(overrides: Partial<S3Config> = {}): S3Config {
  return {
    bucketName: BUCKET,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET,
    region: REGION,
    endpoint: receiver.url,
    prefix: 'openrouter-traces',
    pathTemplate: '{prefix}/{date}',
    ...overrides,
  };
}

const context = (overrides: Partial<S3Config> = {}): ExportContext<S3Config> =>
  exportContext(config(overrides), http);

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

function s3Error(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): ReceiverReply {
  return {
    status,
    headers: { 'content-type': 'application/xml', ...headers },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>`,
  };
}

/**
 * Checks a request's AWS Signature V4 the way S3 does, written from the specification
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html) with node:crypto
 * rather than the library the exporter uses. Returns the S3 error to answer, or null when valid.
 */
function signatureProblem(request: ReceivedRequest, expectedToken: string | undefined): ReceiverReply | null {
  const header = request.headers.authorization ?? '';
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      header,
    );
  if (!match) return s3Error(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed');
  const [, accessKey, day, region, signedList, signature] = match as unknown as string[];
  if (accessKey !== ACCESS_KEY) {
    return s3Error(
      403,
      'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.',
    );
  }
  if (region !== REGION)
    return s3Error(400, 'AuthorizationHeaderMalformed', `the region '${region}' is wrong`);
  const amzDate = request.headers['x-amz-date'];
  if (amzDate !== NOW || !amzDate.startsWith(day as string)) {
    return s3Error(
      403,
      'RequestTimeTooSkewed',
      'The difference between the request time and the current time is too large.',
    );
  }
  const payloadHash = request.headers['x-amz-content-sha256'];
  const expectedHash = request.method === 'PUT' ? sha256(request.raw) : EMPTY_SHA256;
  if (payloadHash !== expectedHash) {
    return s3Error(
      400,
      'XAmzContentSHA256Mismatch',
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    );
  }
  const signed = (signedList as string).split(';');
  const unsigned = Object.keys(request.headers).filter(
    (name) => name.startsWith('x-amz-') && !signed.includes(name),
  );
  if (!signed.includes('host') || unsigned.length > 0) {
    return s3Error(403, 'AccessDenied', 'There were headers present in the request which were not signed');
  }
  if (expectedToken !== undefined && request.headers['x-amz-security-token'] !== expectedToken) {
    return s3Error(403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
  }
  const [path, query = ''] = request.url.split('?') as [string, string?];
  const canonicalQuery = query.split('&').filter(Boolean).sort().join('&');
  const canonicalHeaders = signed
    .map(
      (name) =>
        `${name}:${String(request.headers[name] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const canonicalRequest = [
    request.method,
    path,
    canonicalQuery,
    canonicalHeaders,
    signedList,
    payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${SECRET}`, day as string), region as string), 's3'), 'aws4_request');
  if (hmac(key, stringToSign).toString('hex') !== signature) {
    return s3Error(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided.',
    );
  }
  return null;
}

/** Answers like an S3 bucket reached path-style: PUT stores the object, HEAD on the bucket is 200. */
function fakeS3(options: { token?: string; fail?: (request: ReceivedRequest) => ReceiverReply | null } = {}) {
  return (request: ReceivedRequest): ReceiverReply => {
    const refused = signatureProblem(request, options.token);
    if (refused) return refused;
    const injected = options.fail?.(request);
    if (injected) return injected;
    const path = request.url.split('?')[0] as string;
    if (request.method === 'HEAD' && path === `/${BUCKET}`) return { status: 200 };
    if (!path.startsWith(`/${BUCKET}/`))
      return s3Error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    if (request.method !== 'PUT')
      return s3Error(405, 'MethodNotAllowed', 'The specified method is not allowed');
    objects.set(decodeURIComponent(path.slice(BUCKET.length + 2)), request.text);
    return { status: 200, headers: { etag: `"${createHash('md5').update(request.raw).digest('hex')}"` } };
  };
}

const storedDocument = (key: string) => JSON.parse(objects.get(key) ?? 'null') as Record<string, unknown>;
const EXPECTED_KEY = 'openrouter-traces/2026-11-22/4bf92f3577b34da6a3ce929d0e0e4736-1795341600000.json';

test('an event is PUT, signed with SigV4, as a Langfuse-like trace at <prefix>/<date>/<traceId>-<start>.json', async () => {
  const outcome = await s3Destination.send([outboxItem()], context());
  assert.deepEqual(outcome, {});
  assert.equal(receiver.requests.length, 1);
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.method, 'PUT');
  assert.equal(request.url, `/${BUCKET}/${EXPECTED_KEY}`);
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['x-amz-content-sha256'], sha256(request.raw));
  assert.match(
    request.headers.authorization ?? '',
    /SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date,/,
  );
  const document = storedDocument(EXPECTED_KEY);
  assert.deepEqual(
    {
      id: document.id,
      name: document.name,
      userId: document.userId,
      sessionId: document.sessionId,
      metadata: document.metadata,
      timestamp: document.timestamp,
      totalCost: document.totalCost,
      latency: document.latency,
    },
    {
      id: '4bf92f3577b34da6a3ce929d0e0e4736',
      name: null,
      userId: 'user_12345',
      sessionId: 'session_abc',
      metadata: { order_id: 'ORD-12345' },
      timestamp: '2026-11-22T10:00:00.000Z',
      totalCost: 0.00075,
      latency: 1.25,
    },
  );
  const [observation] = document.observations as Array<Record<string, unknown>>;
  assert.ok(observation);
  assert.equal(observation.type, 'GENERATION');
  assert.equal(observation.id, '00f067aa0ba902b7');
  assert.equal(observation.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(observation.name, 'openai/gpt-4o');
  assert.equal(observation.model, 'openai/gpt-4o');
  assert.equal(observation.startTime, '2026-11-22T10:00:00.000Z');
  assert.equal(observation.endTime, '2026-11-22T10:00:01.250Z');
  assert.equal(observation.completionStartTime, '2026-11-22T10:00:00.300Z');
  assert.equal(observation.level, 'DEFAULT');
  assert.deepEqual(observation.modelParameters, { temperature: 0.2, max_output_tokens: 256 });
  assert.deepEqual(observation.input, sampleEvent().input);
  assert.deepEqual(observation.output, sampleEvent().output);
  assert.deepEqual(observation.usage, { input: 100, output: 50, total: 150, unit: 'TOKENS' });
  assert.deepEqual(observation.costDetails, { total: 0.00075, input: 0.00025, output: 0.0005 });
  const metadata = observation.metadata as Record<string, unknown>;
  assert.equal(metadata.generation_id, 'gen-1732276800-abcdefghijklmnop');
  assert.deepEqual(metadata.identity, sampleEvent().identity);
  assert.deepEqual(metadata.request_context, sampleEvent().request_context);
});

test('the session token is sent as x-amz-security-token and signed', async () => {
  receiver.reply = fakeS3({ token: 'FwoGZXIvYXdzEXAMPLETOKEN' });
  await s3Destination.send([outboxItem()], context({ sessionToken: 'FwoGZXIvYXdzEXAMPLETOKEN' }));
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.headers['x-amz-security-token'], 'FwoGZXIvYXdzEXAMPLETOKEN');
  assert.match(request.headers.authorization ?? '', /x-amz-security-token/);
  assert.ok(objects.has(EXPECTED_KEY));
});

test('a request signed with the wrong secret is refused by S3 (403 SignatureDoesNotMatch) and not retried', async () => {
  await assert.rejects(
    s3Destination.send([outboxItem()], context({ secretAccessKey: 'not-the-secret' })),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 403);
      assert.equal(error.retryable, false);
      assert.match(error.message, /SignatureDoesNotMatch/);
      return true;
    },
  );
  assert.equal(objects.size, 0);
});

test('privacy mode and absent optional parts: no bodies, no cost detail, identity or request context', async () => {
  await s3Destination.send([outboxItem(privateEvent())], context());
  const text = objects.get(EXPECTED_KEY) ?? '';
  const [observation] = (JSON.parse(text) as { observations: Array<Record<string, unknown>> }).observations;
  assert.ok(observation);
  assert.equal('input' in observation, false);
  assert.equal('output' in observation, false);
  assert.deepEqual(observation.costDetails, { total: 0.00075 });
  const metadata = observation.metadata as Record<string, unknown>;
  assert.equal('identity' in metadata, false);
  assert.equal('request_context' in metadata, false);
  assert.equal('cost' in metadata, false);
  for (const secret of ['Say hello', 'You are terse', 'Hello.', 'a'.repeat(64), 'example.com']) {
    assert.equal(text.includes(secret), false, `${secret} must not be stored`);
  }
});

test('custom headers are sent and signed, but cannot replace the signing headers', async () => {
  await s3Destination.send(
    [outboxItem()],
    context({
      headers: {
        'x-amz-server-side-encryption': 'AES256',
        'X-Team': 'observability',
        Authorization: 'Bearer nope',
        'X-Amz-Date': '20000101T000000Z',
      },
    }),
  );
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.headers['x-amz-server-side-encryption'], 'AES256');
  assert.equal(request.headers['x-team'], 'observability');
  assert.equal(request.headers['x-amz-date'], NOW);
  assert.match(request.headers.authorization ?? '', /^AWS4-HMAC-SHA256 /);
  assert.match(request.headers.authorization ?? '', /x-amz-server-side-encryption;x-team/);
  assert.ok(objects.has(EXPECTED_KEY));
});

test('the path template renders {prefix} {year} {month} {day} {apiKeyName}, made path-safe', async () => {
  const overrides = {
    prefix: 'gateway/traces',
    pathTemplate: '{prefix}/key={apiKeyName}/{year}/{month}/{day}',
  };
  await s3Destination.send([outboxItem(sampleEvent({ api_key_name: '../Prod key/α' }))], context(overrides));
  assert.deepEqual(
    [...objects.keys()],
    ['gateway/traces/key=Prod-key/2026/11/22/4bf92f3577b34da6a3ce929d0e0e4736-1795341600000.json'],
  );
  assert.equal(objectKey(config({ prefix: '' }), sampleEvent()), `2026-11-22/${EXPECTED_KEY.split('/')[2]}`);
});

test('generations of a trace the client named get an object each, even when they start in the same millisecond', async () => {
  const shared = (spanId: string, generationId: string) =>
    sampleEvent({
      generation_id: generationId,
      trace: {
        ...sampleEvent().trace,
        trace_id: 'f70ae2f1e02d03ac343e5dab0e231842',
        external_trace_id: 'agent-run-77',
        span_id: spanId,
      },
    });
  await s3Destination.send(
    [
      outboxItem(shared('1111111111111111', 'gen-1795341600-aaaaaaaaaaaaaaaa')),
      outboxItem(shared('2222222222222222', 'gen-1795341600-bbbbbbbbbbbbbbbb')),
    ],
    context(),
  );
  assert.deepEqual([...objects.keys()].sort(), [
    'openrouter-traces/2026-11-22/f70ae2f1e02d03ac343e5dab0e231842-1795341600000-1111111111111111.json',
    'openrouter-traces/2026-11-22/f70ae2f1e02d03ac343e5dab0e231842-1795341600000-2222222222222222.json',
  ]);
  // A redelivery writes the same object again, not a third one.
  await s3Destination.send(
    [outboxItem(shared('1111111111111111', 'gen-1795341600-aaaaaaaaaaaaaaaa'))],
    context(),
  );
  assert.equal(objects.size, 2);
});

test("characters S3 percent-encodes in the canonical URI (!'()*=) are signed as sent", async () => {
  await s3Destination.send(
    [outboxItem()],
    context({ prefix: "logs(prod)!*'", pathTemplate: 'v=1/{prefix}' }),
  );
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.url.split('/').slice(0, 4).join('/'), `/${BUCKET}/v%3D1/logs%28prod%29%21%2A%27`);
  assert.deepEqual([...objects.keys()], [`v=1/logs(prod)!*'/${EXPECTED_KEY.split('/')[2]}`]);
});

test('the same event sent twice writes the same object with the same bytes (idempotent)', async () => {
  const item = outboxItem();
  await s3Destination.send([item], context());
  const first = objects.get(EXPECTED_KEY);
  await s3Destination.send([{ ...item, attempt: 2 }], context());
  assert.equal(objects.size, 1);
  assert.equal(objects.get(EXPECTED_KEY), first);
  const [one, two] = receiver.requests as [ReceivedRequest, ReceivedRequest];
  assert.equal(one.url, two.url);
  assert.equal(one.headers['x-amz-content-sha256'], two.headers['x-amz-content-sha256']);
});

test('503 SlowDown is retryable and carries Retry-After', async () => {
  receiver.reply = fakeS3({
    fail: () => s3Error(503, 'SlowDown', 'Please reduce your request rate.', { 'retry-after': '3' }),
  });
  await assert.rejects(s3Destination.send([outboxItem()], context()), (error) => {
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.status, 503);
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterMs, 3000);
    assert.match(error.message, /SlowDown/);
    return true;
  });
});

test('500 InternalError is retryable; 429 from an S3-compatible store honours Retry-After', async () => {
  receiver.reply = fakeS3({ fail: () => s3Error(500, 'InternalError', 'We encountered an internal error.') });
  await assert.rejects(s3Destination.send([outboxItem()], context()), { retryable: true, status: 500 });
  receiver.reply = fakeS3({
    fail: () =>
      s3Error(429, 'TooManyRequests', 'Reduce your concurrent request rate.', { 'retry-after': '7' }),
  });
  await assert.rejects(s3Destination.send([outboxItem()], context()), {
    retryable: true,
    retryAfterMs: 7000,
  });
});

test('400 and 403 answers are not retryable', async () => {
  receiver.reply = fakeS3({ fail: () => s3Error(400, 'InvalidRequest', 'Invalid Request') });
  await assert.rejects(s3Destination.send([outboxItem()], context()), { retryable: false, status: 400 });
  receiver.reply = fakeS3({ fail: () => s3Error(403, 'AccessDenied', 'Access Denied') });
  await assert.rejects(s3Destination.send([outboxItem()], context()), { retryable: false, status: 403 });
});

test('one PUT per event; a failed PUT is reported for its item only', async () => {
  const second = sampleEvent({
    generation_id: 'gen-2',
    trace: { ...sampleEvent().trace, trace_id: 'ffffffffffffffffffffffffffffffff' },
  });
  receiver.reply = fakeS3({
    fail: (request) =>
      request.url.includes('ffffffff') ? s3Error(503, 'SlowDown', 'Please reduce your request rate.') : null,
  });
  const outcome = await s3Destination.send([outboxItem(), outboxItem(second)], context());
  assert.equal(receiver.requests.length, 2);
  assert.deepEqual([...objects.keys()], [EXPECTED_KEY]);
  assert.equal(outcome?.rejected?.length, 1);
  assert.equal(outcome?.rejected?.[0]?.index, 1);
  assert.equal(outcome?.rejected?.[0]?.retryable, true);
  assert.match(outcome?.rejected?.[0]?.message ?? '', /503/);
  // The refusal keeps what the receiver said, for the item's backoff and its deliveries record.
  assert.equal(outcome?.rejected?.[0]?.status, 503);
});

test('testConnection sends a signed HEAD of the bucket and stores nothing', async () => {
  await s3Destination.testConnection(context());
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.method, 'HEAD');
  assert.equal(request.url, `/${BUCKET}`);
  assert.equal(request.headers['x-amz-content-sha256'], EMPTY_SHA256);
  assert.equal(objects.size, 0);
});

test('testConnection fails without retry on 403, 404 and a bucket in another region', async () => {
  await assert.rejects(s3Destination.testConnection(context({ secretAccessKey: 'wrong' })), {
    retryable: false,
    status: 403,
  });
  await assert.rejects(s3Destination.testConnection(context({ bucketName: 'no-such-bucket' })), {
    retryable: false,
    status: 404,
  });
  receiver.reply = fakeS3({
    fail: () => ({ status: 301, headers: { 'x-amz-bucket-region': 'ap-south-1' } }),
  });
  await assert.rejects(s3Destination.testConnection(context()), (error) => {
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.retryable, false);
    assert.match(error.message, /ap-south-1/);
    return true;
  });
});

test('urls() names the bucket: path style under an endpoint, virtual-hosted on AWS (us-east-1 by default)', () => {
  assert.deepEqual(s3Destination.urls(config({ endpoint: 'https://acct.r2.cloudflarestorage.com/' })), [
    `https://acct.r2.cloudflarestorage.com/${BUCKET}/`,
  ]);
  const { endpoint: _endpoint, region: _region, ...aws } = config();
  assert.deepEqual(s3Destination.urls(aws), [`https://${BUCKET}.s3.us-east-1.amazonaws.com/`]);
  assert.deepEqual(s3Destination.urls({ ...aws, region: 'eu-central-1' }), [
    `https://${BUCKET}.s3.eu-central-1.amazonaws.com/`,
  ]);
  // A bucket name with dots is no host name AWS's certificate covers: path style.
  assert.deepEqual(s3Destination.urls({ ...aws, bucketName: 'logs.example.com', region: 'eu-west-1' }), [
    'https://s3.eu-west-1.amazonaws.com/logs.example.com/',
  ]);
});

test('validate() enforces bucket naming, the endpoint scheme and safe templates', () => {
  const problems = (overrides: Partial<S3Config>) =>
    (s3Destination.validate?.(config(overrides)) ?? []).map((problem) => problem.field);
  assert.deepEqual(problems({}), []);
  assert.deepEqual(problems({ pathTemplate: '{prefix}/{apiKeyName}/{year}-{month}-{day}/{date}' }), []);
  for (const bucketName of [
    'Upper',
    'ab',
    'a'.repeat(64),
    'under_score',
    'two..dots',
    '192.168.1.1',
    '-dash',
    'xn--x',
  ]) {
    assert.deepEqual(problems({ bucketName }), ['bucketName'], bucketName);
  }
  assert.deepEqual(problems({ endpoint: 'ftp://minio.local' }), ['endpoint']);
  assert.deepEqual(problems({ prefix: '../escape' }), ['prefix']);
  assert.deepEqual(problems({ prefix: '/rooted' }), ['prefix']);
  assert.deepEqual(problems({ prefix: '{date}' }), ['prefix']);
  assert.deepEqual(problems({ pathTemplate: '/{prefix}' }), ['pathTemplate']);
  assert.deepEqual(problems({ pathTemplate: '{prefix}/../{date}' }), ['pathTemplate']);
  assert.deepEqual(problems({ pathTemplate: '{prefix}/{hostname}' }), ['pathTemplate']);
  assert.deepEqual(problems({ pathTemplate: '{prefix}/{date' }), ['pathTemplate']);
  assert.deepEqual(problems({ region: 'EU West' }), ['region']);
});

test('config surface: defaults, secrets, batch size', () => {
  assert.deepEqual(s3Destination.defaults, { prefix: 'openrouter-traces', pathTemplate: '{prefix}/{date}' });
  assert.deepEqual([...s3Destination.secretFields].sort(), [
    'accessKeyId',
    'secretAccessKey',
    'sessionToken',
  ]);
  assert.equal(s3Destination.testOnSave, false);
  assert.ok(s3Destination.maxBatch >= 1);
});
