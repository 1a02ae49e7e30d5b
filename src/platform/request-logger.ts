import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Log = (...args: unknown[]) => void;

/** The parent a request logger defers to: a pino logger (Fastify's `loggerInstance`). */
export interface LevelledLogger extends FastifyBaseLogger {
  isLevelEnabled(level: string): boolean;
}

/**
 * A request's logger (`request.log`), whose pino child, bound to the request id, is made on the
 * first line logged at an enabled level. Fastify makes a logger for every request, and few log
 * anything: a pino child per request (its bindings rendered to text, a log function per enabled
 * level) cost ~450 bytes that lived as long as the request, through the young-generation
 * collections a request in flight survives (docs/performance.md, session 26). Lines at disabled
 * levels return at once, as a pino child's would.
 */
export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: LevelledLogger,
    private readonly bindings: Bindings,
  ) {}

  /** The pino child, made on first use. */
  logger(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings);
    return this.#child;
  }

  get level(): LevelWithSilentOrString {
    return this.#child ? this.#child.level : this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.logger().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }

  private log(level: Level, args: unknown[]): void {
    // Until the child exists its level is the parent's (a level set on it makes it).
    if (this.#child === null && !this.parent.isLevelEnabled(level)) return;
    const child = this.logger();
    (child[level] as Log).apply(child, args);
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  /** pino's `silent` level logs nothing. */
  silent(): void {}
}

/**
 * Fastify's `childLoggerFactory`: a RequestLogger, or pino's own child when the route asks for a
 * level of its own (`logLevel`) or the parent cannot say which levels are enabled.
 */
export function requestLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  const levelled = logger as Partial<LevelledLogger>;
  if (Object.keys(options).length > 0 || typeof levelled.isLevelEnabled !== 'function')
    return logger.child(bindings, options);
  return new RequestLogger(logger as LevelledLogger, bindings);
}
