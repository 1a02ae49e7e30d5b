import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CachedKey, KeyCache } from '../../admin/keys/key-cache.js';
import { AppError, invalidRequest, managementKeyRequired } from '../../errors/app-error.js';
import type { Clock } from '../../platform/clock.js';
import { hashApiKey } from '../../platform/ids.js';
import type { RateLimitDecision, RateLimiter } from './rate-limiter.js';

/** Who is calling: the key's hash and kind, its workspace, and the cached key entry with usage. */
export interface Principal {
  keyHash: string;
  isManagement: boolean;
  workspaceId: string;
  key: CachedKey;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** `public` routes skip authentication; `management` routes need a management key. */
    auth?: 'public' | 'any' | 'management';
  }
}

const MAX_TOKEN_LENGTH = 512;

/** Tokens of valid keys whose hash is remembered (see `createAuthenticator`). */
const REMEMBERED_TOKENS = 4_096;

const unauthorized = (message: string) => new AppError('authentication', message);

/** A rejection handler for a hook's `done`: a rejection without a reason still fails the request. */
const failWith =
  (done: (error?: Error) => void) =>
  (error: unknown): void =>
    done(error instanceof Error ? error : new Error(`authentication failed: ${String(error)}`));

/**
 * The bearer credential. Anthropic's clients send the key as `x-api-key` instead (SDKs before 1.0,
 * curl examples from its docs); it is accepted as if it were `Authorization: Bearer <key>`.
 */
function credentialHeader(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.trim() !== '') return authorization;
  const apiKey = headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey.trim() !== '' ? `Bearer ${apiKey.trim()}` : authorization;
}

/**
 * Whether the request names its credential more than once (two `Authorization` or two `x-api-key`
 * lines): Node keeps the first and drops the rest, while a proxy in front may have checked the last,
 * so which key a request runs as would depend on who reads it. Scanned in the raw list (a pair per
 * header line), which costs a few comparisons.
 */
function repeatsCredential(rawHeaders: readonly string[]): boolean {
  let authorization = 0;
  let apiKey = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string;
    if (name.length === 13 && name.toLowerCase() === 'authorization') authorization += 1;
    else if (name.length === 9 && name.toLowerCase() === 'x-api-key') apiKey += 1;
  }
  return authorization > 1 || apiKey > 1;
}

/** The credential header of a request, or the 400 of a credential named twice. */
function credentialOf(headers: IncomingHttpHeaders, rawHeaders: readonly string[]): string | undefined {
  if (repeatsCredential(rawHeaders)) {
    throw invalidRequest(
      'Invalid request parameters: the request names its credential more than once (two Authorization or x-api-key headers): send one',
    );
  }
  return credentialHeader(headers);
}

/** Fastify's onRequest hook, callback style. */
type OnRequestHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

export interface Authenticator {
  /** The onRequest hook of every route: the principal, or the 401/403/429 that refuses the request. */
  hook: OnRequestHook;
  /**
   * The principal of the key these headers name, as the hook finds it: at once when the key is in
   * memory, else once it is loaded; throws (or rejects with) the 401 of a missing, malformed,
   * unknown, disabled or expired key. The direct lane (src/gateway/direct-lane.ts) authenticates
   * with it, so its answers are the hook's.
   */
  principalOf(headers: IncomingHttpHeaders, rawHeaders: readonly string[]): Principal | Promise<Principal>;
  /** Counts one request against the key's rate limit: null when admitted, else the 429 to send. */
  rateLimit(principal: Principal): AppError | null | Promise<AppError | null>;
}

/**
 * Resolves the bearer token to a principal from the in-memory key cache, then applies the
 * per-key rate limit. No database query once the key has been seen.
 */
export function createAuthenticator(options: {
  cache: KeyCache;
  clock: Clock;
  rateLimiter: RateLimiter | null;
}): Authenticator {
  const { cache, clock, rateLimiter } = options;
  /**
   * The SHA-256 of tokens that named a valid key, by token: hashing costs every request ~4-7 µs of
   * CPU, a lookup well under one. Only a token whose key was found is remembered, so a client
   * sending made-up tokens cannot churn the memo; the oldest entry makes way past the bound. It maps
   * a token to its hash and nothing more: whether the key is still valid (deleted, disabled,
   * expired) is the key cache's answer on every request.
   */
  const hashes = new Map<string, string>();

  function remember(token: string, hash: string): void {
    if (hashes.size >= REMEMBERED_TOKENS) hashes.delete(hashes.keys().next().value as string);
    hashes.set(token, hash);
  }

  function checked(hash: string, entry: CachedKey | null): Principal {
    if (!entry) throw unauthorized('Invalid API key');
    if (entry.row.disabled === 1) throw unauthorized('API key is disabled');
    if (entry.row.expires_at !== null && Date.parse(entry.row.expires_at) <= clock.now().getTime()) {
      throw unauthorized('API key has expired');
    }
    return {
      keyHash: hash,
      isManagement: entry.row.is_management === 1,
      workspaceId: entry.row.workspace_id,
      key: entry,
    };
  }

  /** The bearer token of a credential header, or null when the header holds none. */
  function tokenOf(header: string): string | null {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1] && match[1].length <= MAX_TOKEN_LENGTH ? match[1] : null;
  }

  /** The principal, without awaiting when the key's entry is already in memory (the common case). */
  function principalFor(header: string | undefined): Principal | Promise<Principal> {
    if (header === undefined || header.trim() === '') throw unauthorized('Missing Authentication header');
    const token = tokenOf(header);
    if (token === null) throw unauthorized('Invalid Authentication header: expected "Bearer <API key>"');
    const known = hashes.get(token);
    const hash = known ?? hashApiKey(token);
    const cached = cache.peek(hash);
    if (cached) {
      const principal = checked(hash, cached);
      if (known === undefined) remember(token, hash);
      return principal;
    }
    return cache.get(hash).then((entry) => checked(hash, entry));
  }

  function rateLimited(decision: RateLimitDecision): AppError | null {
    if (decision.allowed) return null;
    const retryAfter = Math.max(1, decision.resetAt - Math.floor(clock.now().getTime() / 1000));
    return new AppError('rate_limit_exceeded', 'Rate limit exceeded', {
      metadata: { error_type: 'rate_limit_exceeded' },
      headers: {
        'retry-after': String(retryAfter),
        'x-ratelimit-limit': String(decision.limit),
        'x-ratelimit-remaining': String(decision.remaining),
        'x-ratelimit-reset': String(decision.resetAt * 1000),
      },
    });
  }

  function rateLimit(principal: Principal): AppError | null | Promise<AppError | null> {
    if (!rateLimiter) return null;
    const decision = rateLimiter.hit(principal.keyHash);
    return decision instanceof Promise ? decision.then(rateLimited) : rateLimited(decision);
  }

  function admit(
    request: FastifyRequest,
    auth: 'any' | 'management',
    principal: Principal,
    done: (error?: Error) => void,
  ): void {
    request.principal = principal;
    if (auth === 'management' && !principal.isManagement) {
      done(managementKeyRequired());
      return;
    }
    let refusal: AppError | null | Promise<AppError | null>;
    try {
      refusal = rateLimit(principal);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (refusal instanceof Promise) {
      refusal.then((settled) => done(settled ?? undefined), failWith(done));
      return;
    }
    done(refusal ?? undefined);
  }

  /**
   * A callback-style onRequest hook: a request whose key is cached passes without a promise (this
   * runs for every request; each avoided await is time on the hot path).
   */
  const hook: OnRequestHook = (request, _reply, done) => {
    const auth = request.routeOptions.config.auth ?? 'any';
    // An unknown route answers 404 whoever asks; there is nothing behind it to protect.
    if (auth === 'public' || request.is404) {
      done();
      return;
    }
    let principal: Principal | Promise<Principal>;
    try {
      principal = principalFor(credentialOf(request.headers, request.raw.rawHeaders));
    } catch (error) {
      done(error as Error);
      return;
    }
    if (principal instanceof Promise) {
      principal
        .then((settled) => admit(request, auth, settled, done), failWith(done))
        .catch((error: unknown) => request.log.error({ err: error }, 'authentication failed unexpectedly'));
      return;
    }
    admit(request, auth, principal, done);
  };
  return {
    hook,
    principalOf: (headers, rawHeaders) => principalFor(credentialOf(headers, rawHeaders)),
    rateLimit,
  };
}
