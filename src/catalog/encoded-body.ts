import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

type Encoding = 'br' | 'gzip' | 'identity';

/** A response body with its compressed forms, each made on first demand and kept. */
export class EncodedBody {
  private readonly forms = new Map<Encoding, Buffer>();

  constructor(
    readonly identity: Buffer,
    readonly contentType: string,
  ) {
    this.forms.set('identity', identity);
  }

  get(encoding: Encoding): Buffer {
    let form = this.forms.get(encoding);
    if (!form) {
      form =
        encoding === 'br'
          ? brotliCompressSync(this.identity, {
              params: {
                [constants.BROTLI_PARAM_QUALITY]: 5,
                [constants.BROTLI_PARAM_SIZE_HINT]: this.identity.length,
              },
            })
          : gzipSync(this.identity, { level: 6 });
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

/** A small least-recently-used cache of prepared bodies, keyed by the normalized query. */
export class BodyCache {
  private readonly entries = new Map<string, EncodedBody>();

  constructor(private readonly capacity: number) {}

  get(key: string, make: () => EncodedBody): EncodedBody {
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
      return found;
    }
    const made = make();
    this.entries.set(key, made);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    return made;
  }
}
