import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import {
  type LevelledLogger,
  RequestLogger,
  requestLoggerFactory,
} from '../../src/platform/request-logger.js';

/** A pino logger at `level` whose lines are collected, and a count of the children made of it. */
function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const children = { made: 0 };
  const logger = pino(
    {
      level,
      onChild: () => {
        children.made += 1;
      },
    },
    stream,
  );
  return { logger: logger as unknown as LevelledLogger, lines, children };
}

describe('RequestLogger', () => {
  it('makes no pino child until a line is logged at an enabled level, then one', () => {
    const { logger, lines, children } = capture('warn');
    const log = new RequestLogger(logger, { reqId: 'req-1' });
    log.info('not logged');
    log.debug({ a: 1 }, 'not logged');
    log.trace('not logged');
    log.silent();
    assert.equal(children.made, 0);
    assert.equal(log.level, 'warn');
    log.warn({ detail: 7 }, 'slow %s', 'upstream');
    log.error(new Error('boom'), 'failed');
    log.fatal('down');
    assert.equal(children.made, 1);
    assert.deepEqual(
      lines.map((line) => [line.level, line.reqId, line.msg]),
      [
        [40, 'req-1', 'slow upstream'],
        [50, 'req-1', 'failed'],
        [60, 'req-1', 'down'],
      ],
    );
    assert.equal(lines[0]?.detail, 7);
    assert.equal((lines[1]?.err as { message?: string } | undefined)?.message, 'boom');
  });

  it('takes a level of its own through its child, and makes children of it', () => {
    const { logger, lines, children } = capture('warn');
    const log = new RequestLogger(logger, { reqId: 'req-2' });
    log.level = 'info';
    assert.equal(children.made, 1);
    assert.equal(log.level, 'info');
    log.info('now logged');
    log.child({ part: 'upstream' }).warn('nested');
    assert.deepEqual(
      lines.map((line) => [line.reqId, line.part, line.msg]),
      [
        ['req-2', undefined, 'now logged'],
        ['req-2', 'upstream', 'nested'],
      ],
    );
    assert.equal(logger.level, 'warn', 'the parent keeps its level');
  });

  it("is request.log in Fastify: Fastify's own lines and a handler's carry the request id", async () => {
    const { logger, lines, children } = capture('info');
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: requestLoggerFactory });
    app.get('/quiet', async () => ({ ok: true }));
    app.get('/loud', async (request) => {
      request.log.error({ code: 'E1' }, 'handler failed');
      return { ok: false };
    });
    app.get('/own-level', { logLevel: 'error' }, async (request) => {
      request.log.info('not logged at this route');
      return { ok: true };
    });
    await app.ready();
    const before = children.made;
    for (const url of ['/quiet', '/loud', '/own-level']) {
      const reply = await app.inject({ method: 'GET', url });
      assert.equal(reply.statusCode, 200);
    }
    await app.close();
    const handler = lines.find((line) => line.msg === 'handler failed');
    assert.equal(handler?.code, 'E1');
    assert.match(String(handler?.reqId), /^req-/);
    const incoming = lines.filter((line) => line.msg === 'incoming request');
    assert.equal(incoming.length, 2, 'the route at level error logs no request lines');
    assert.ok(incoming.every((line) => typeof line.reqId === 'string'));
    assert.equal(lines.filter((line) => line.msg === 'not logged at this route').length, 0);
    assert.equal(children.made - before, 3, 'one child per request once it logs');
  });

  it('leaves a request silent at warn: no child for a request that logs nothing', async () => {
    const { logger, lines, children } = capture('warn');
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: requestLoggerFactory });
    app.get('/quiet', async () => ({ ok: true }));
    await app.ready();
    const before = children.made;
    for (let i = 0; i < 5; i++)
      assert.equal((await app.inject({ method: 'GET', url: '/quiet' })).statusCode, 200);
    await app.close();
    assert.equal(children.made - before, 0);
    assert.deepEqual(lines, []);
  });
});
