import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

type Encoding = 'br' | 'gzip' | 'identity';

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/**
 * A response body with its compressed forms, each made on first demand (in libuv's thread pool,
 * off the event loop) and kept. Concurrent first demands share one compression.
 */
export class EncodedBody {
  private readonly forms = new Map<Encoding, Promise<Buffer>>();
  /** Bytes held: the identity form plus every compressed form made so far. */
  size: number;

  constructor(
    readonly identity: Buffer,
    readonly contentType: string,
    private readonly onGrow: (bytes: number) => void = () => {},
  ) {
    this.size = identity.length;
    this.forms.set('identity', Promise.resolve(identity));
  }

  get(encoding: Encoding): Promise<Buffer> {
    let form = this.forms.get(encoding);
    if (!form) {
      form =
        encoding === 'br'
          ? brotliAsync(this.identity, {
              params: {
                [constants.BROTLI_PARAM_QUALITY]: 5,
                [constants.BROTLI_PARAM_SIZE_HINT]: this.identity.length,
              },
            })
          : gzipAsync(this.identity, { level: 6 });
      form.then((buffer) => {
        this.size += buffer.length;
        this.onGrow(buffer.length);
      });
      this.forms.set(encoding, form);
    }
    return form;
  }
}

/** Bodies smaller than this are sent as they are: compressing them saves less than it costs. */
const MIN_COMPRESS_BYTES = 1024;

/** Picks br, then gzip, from Accept-Encoding (honouring q=0), else identity. */
export function chooseEncoding(header: string | undefined, size: number): Encoding {
  if (!header || size < MIN_COMPRESS_BYTES) return 'identity';
  const accepted = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...parameters] = part.trim().toLowerCase().split(';');
    const q = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/.exec(parameter)?.[1]).find(Boolean);
    accepted.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  const allows = (name: string) => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0;
  if (allows('br')) return 'br';
  if (allows('gzip')) return 'gzip';
  return 'identity';
}

/**
 * Least-recently-used prepared bodies, bounded by the bytes they hold (all forms counted), so a
 * client sending many distinct queries cannot grow memory past the bound.
 */
export class BodyCache {
  private readonly entries = new Map<string, EncodedBody>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string, make: (onGrow: (bytes: number) => void) => EncodedBody): EncodedBody {
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
      return found;
    }
    const made = make((grown) => {
      if (this.entries.get(key) !== made) return;
      this.bytes += grown;
      this.evict();
    });
    this.entries.set(key, made);
    this.bytes += made.size;
    this.evict();
    return made;
  }

  /** Bytes held by the cached bodies (for tests and metrics). */
  heldBytes(): number {
    return this.bytes;
  }

  private evict(): void {
    while (this.bytes > this.maxBytes && this.entries.size > 1) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, EncodedBody];
      this.entries.delete(oldestKey);
      this.bytes -= oldest.size;
    }
  }
}
