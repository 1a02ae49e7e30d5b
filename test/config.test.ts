import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultConfig } from '../src/config/config-schema.js';
import { ConfigError, loadConfig } from '../src/config/load-config.js';
import { newSecret } from './helpers/test-app.js';

/** `${NAME}`: how a config file refers to an environment variable. */
const ref = (name: string) => `\${${name}}`;

/** Asserts that `work` throws a ConfigError whose message matches every pattern; returns the message. */
function configError(work: () => unknown, ...patterns: RegExp[]): string {
  let caught: unknown;
  try {
    work();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.equal(caught.name, 'ConfigError');
  for (const pattern of patterns) assert.match(caught.message, pattern);
  return caught.message;
}

describe('loadConfig', () => {
  let directory: string;
  let counter = 0;
  /** Writes a config file into the temp directory and returns its path. */
  const file = (text: string, extension = 'yaml') => {
    counter += 1;
    const path = join(directory, `config-${counter}.${extension}`);
    writeFileSync(path, text);
    return path;
  };

  before(() => {
    directory = mkdtempSync(join(tmpdir(), 'switchyard-config-'));
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  describe('defaults and the environment', () => {
    it('uses the defaults when nothing is set', () => {
      const config = loadConfig({});
      assert.equal(config.port, 8080);
      assert.equal(config.host, '127.0.0.1');
      assert.equal(config.database_url, 'sqlite:./data/switchyard.db');
      assert.equal(config.redis_url, null);
      assert.equal(config.master_key, null);
      assert.equal(config.bootstrap_key, null);
      assert.deepEqual(config.providers, {});
      assert.equal(config.credits.initial, 0);
    });

    it('does not read process.env when given an env object', () => {
      const saved = process.env.PORT;
      process.env.PORT = '1234';
      try {
        assert.equal(loadConfig({}).port, 8080);
      } finally {
        if (saved === undefined) delete process.env.PORT;
        else process.env.PORT = saved;
      }
    });

    it('applies PORT, HOST, DATABASE_URL, REDIS_URL and the two keys from the environment', () => {
      const bootstrap = newSecret();
      const master = 'm'.repeat(40);
      const config = loadConfig({
        PORT: '9090',
        HOST: '0.0.0.0',
        DATABASE_URL: 'postgres://user@db.example:5432/switchyard',
        REDIS_URL: 'redis://cache.example:6379',
        SWITCHYARD_BOOTSTRAP_KEY: bootstrap,
        SWITCHYARD_MASTER_KEY: master,
      });
      assert.equal(config.port, 9090);
      assert.equal(config.host, '0.0.0.0');
      assert.equal(config.database_url, 'postgres://user@db.example:5432/switchyard');
      assert.equal(config.redis_url, 'redis://cache.example:6379');
      assert.equal(config.bootstrap_key, bootstrap);
      assert.equal(config.master_key, master);
    });

    it('ignores an empty environment variable', () => {
      assert.equal(loadConfig({ PORT: '', HOST: '' }).port, 8080);
      assert.equal(loadConfig({ PORT: '', HOST: '' }).host, '127.0.0.1');
    });

    it('refuses PORT=abc with a ConfigError naming PORT', () => {
      configError(() => loadConfig({ PORT: 'abc' }), /\bPORT\b/, /abc/);
    });

    it('refuses an out-of-range PORT and a malformed bootstrap key', () => {
      configError(() => loadConfig({ PORT: '70000' }), /port \(PORT\)/, /65535/);
      configError(() => loadConfig({ SWITCHYARD_BOOTSTRAP_KEY: 'sk-nope' }), /bootstrap_key/);
    });

    it('lets the overrides argument win over the environment', () => {
      assert.equal(loadConfig({ PORT: '9090' }, { port: 0 }).port, 0);
    });
  });

  describe('the config file', () => {
    it('reads a YAML file, interpolating variable references from the env object', () => {
      const path = file(
        [
          'providers:',
          '  openai:',
          '    base_url: https://openai.example/v1',
          `    api_key: ${ref('OPENAI_KEY_VAR')}`,
          'credits:',
          '  initial: 25',
          '',
        ].join('\n'),
      );
      const config = loadConfig({ SWITCHYARD_CONFIG: path, OPENAI_KEY_VAR: 'sk-openai-from-env' });
      assert.equal(config.providers.openai?.base_url, 'https://openai.example/v1');
      assert.equal(config.providers.openai?.api_key, 'sk-openai-from-env');
      assert.equal(config.credits.initial, 25);
      // Settings the file does not name keep their defaults, nested ones included.
      assert.equal(config.port, 8080);
      assert.equal(config.limits.rate_limit.requests, 600);
    });

    it('interpolates a variable inside a longer string', () => {
      const path = file(`providers:\n  openai:\n    base_url: https://${ref('API_HOST')}/v1\n`);
      const config = loadConfig({ SWITCHYARD_CONFIG: path, API_HOST: 'proxy.example' });
      assert.equal(config.providers.openai?.base_url, 'https://proxy.example/v1');
    });

    it('reads a JSON file', () => {
      const path = file(
        JSON.stringify({
          port: 7000,
          providers: { anthropic: { api_key: ref('ANTHROPIC_VAR'), timeout_ms: 5000 } },
          credits: { initial: 3.5 },
          limits: { rate_limit: { requests: 0, window_seconds: 10 } },
        }),
        'json',
      );
      const config = loadConfig({ SWITCHYARD_CONFIG: path, ANTHROPIC_VAR: 'sk-ant' });
      assert.equal(config.port, 7000);
      assert.deepEqual(config.providers.anthropic, { api_key: 'sk-ant', timeout_ms: 5000 });
      assert.equal(config.credits.initial, 3.5);
      assert.deepEqual(config.limits.rate_limit, { requests: 0, window_seconds: 10 });
      assert.equal(config.limits.body_bytes, 4 * 1024 * 1024);
    });

    it('treats an empty file as no settings', () => {
      assert.equal(loadConfig({ SWITCHYARD_CONFIG: file('') }).port, 8080);
    });

    it('refuses an unknown top-level key, naming it', () => {
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('prot: 8080\n') }), /\bprot\b/, /unknown key/);
    });

    it('refuses an unknown nested key, naming its path', () => {
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('limits:\n  bogus: 1\n') }),
        /limits\.bogus/,
        /unknown key/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('providers:\n  openai:\n    bogus: true\n') }),
        /providers\.openai\.bogus/,
        /unknown key/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('limits:\n  rate_limit:\n    reqests: 5\n') }),
        /limits\.rate_limit\.reqests/,
      );
    });

    it('refuses an ill-typed value, naming its path', () => {
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('port: "x"\n') }), /\bport\b/, /integer/);
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('credits:\n  initial: -1\n') }),
        /credits\.initial/,
        />= 0/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('providers:\n  openai:\n    timeout_ms: 0\n') }),
        /providers\.openai\.timeout_ms/,
      );
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('log_level: loud\n') }), /log_level/);
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('heap_growth_percent: 301\n') }),
        /heap_growth_percent/,
        /<= 300/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('heap_growth_percent: 12.5\n') }),
        /heap_growth_percent/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('helper_thread_niceness: 20\n') }),
        /helper_thread_niceness/,
        /<= 19/,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('parallel_scavenge: sometimes\n') }),
        /parallel_scavenge/,
      );
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('sqlite_thread: 2\n') }), /sqlite_thread/);
    });

    it('takes sqlite_thread as auto (the default), true or false', () => {
      assert.equal(loadConfig({}).sqlite_thread, 'auto');
      for (const value of [true, false])
        assert.equal(
          loadConfig({ SWITCHYARD_CONFIG: file(`sqlite_thread: ${value}\n`) }).sqlite_thread,
          value,
        );
    });

    it('takes allocation_site_pretenuring as a boolean, off by default', () => {
      assert.equal(loadConfig({}).allocation_site_pretenuring, false);
      assert.equal(
        loadConfig({ SWITCHYARD_CONFIG: file('allocation_site_pretenuring: true\n') })
          .allocation_site_pretenuring,
        true,
      );
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('allocation_site_pretenuring: sometimes\n') }),
        /allocation_site_pretenuring/,
      );
    });

    it('takes parallel_scavenge as auto, true or false', () => {
      assert.equal(loadConfig({}).parallel_scavenge, 'auto');
      assert.equal(
        loadConfig({ SWITCHYARD_CONFIG: file('parallel_scavenge: false\n') }).parallel_scavenge,
        false,
      );
      assert.equal(
        loadConfig({ SWITCHYARD_CONFIG: file('parallel_scavenge: true\n') }).parallel_scavenge,
        true,
      );
    });

    it('caps the young generation at 8 MB by default, takes 0 to leave V8 its own, and refuses the rest', () => {
      assert.equal(loadConfig({}).young_generation_mb, 8);
      assert.equal(
        loadConfig({ SWITCHYARD_CONFIG: file('young_generation_mb: 0\n') }).young_generation_mb,
        0,
      );
      assert.equal(
        loadConfig({ SWITCHYARD_CONFIG: file('young_generation_mb: 16\n') }).young_generation_mb,
        16,
      );
      for (const value of ['-1', '2.5', 'big', '2048']) {
        configError(
          () => loadConfig({ SWITCHYARD_CONFIG: file(`young_generation_mb: ${value}\n`) }),
          /young_generation_mb/,
        );
      }
    });

    it('refuses a broadcast batch linger longer than a quarter of the lease, naming both settings', () => {
      configError(
        () =>
          loadConfig({ SWITCHYARD_CONFIG: file('broadcast:\n  batch_linger_ms: 5000\n  lease_ms: 10000\n') }),
        /broadcast\.batch_linger_ms \(5000\)/,
        /quarter of broadcast\.lease_ms \(10000\)/,
      );
      const fits = loadConfig({
        SWITCHYARD_CONFIG: file('broadcast:\n  batch_linger_ms: 2500\n  lease_ms: 10000\n'),
      });
      assert.equal(fits.broadcast.batch_linger_ms, 2500);
      assert.equal(loadConfig({}).broadcast.batch_linger_ms, 1000);
    });

    it('takes an origin override only for the types whose config names no host, and refuses the others', () => {
      const taken = loadConfig({
        SWITCHYARD_CONFIG: file(
          'broadcast:\n  origin_overrides:\n    snowflake: https://proxy.internal:8443\n',
        ),
      });
      assert.equal(taken.broadcast.origin_overrides.snowflake, 'https://proxy.internal:8443');
      for (const type of ['langfuse', 'webhook', 'foo']) {
        // Their config names its own URL (baseUrl, url…): an override would be ignored without a word.
        configError(
          () =>
            loadConfig({
              SWITCHYARD_CONFIG: file(
                `broadcast:\n  origin_overrides:\n    ${type}: https://proxy.internal\n`,
              ),
            }),
          new RegExp(`broadcast\\.origin_overrides.*${type}`),
        );
      }
      configError(
        () =>
          loadConfig({
            SWITCHYARD_CONFIG: file(
              'broadcast:\n  origin_overrides:\n    opik: https://proxy.internal/path\n',
            ),
          }),
        /broadcast\.origin_overrides\.opik/,
      );
    });

    it('runs the delivery thread SCHED_IDLE by default, and refuses a setting that is not a boolean', () => {
      assert.equal(loadConfig({}).broadcast.delivery_thread_idle, true);
      const off = loadConfig({ SWITCHYARD_CONFIG: file('broadcast:\n  delivery_thread_idle: false\n') });
      assert.equal(off.broadcast.delivery_thread_idle, false);
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('broadcast:\n  delivery_thread_idle: sometimes\n') }),
        /broadcast\.delivery_thread_idle/,
      );
    });

    it('runs the delivery thread at nice 19 by default, and takes 0–19 only', () => {
      assert.equal(loadConfig({}).broadcast.delivery_thread_niceness, 19);
      const normal = loadConfig({ SWITCHYARD_CONFIG: file('broadcast:\n  delivery_thread_niceness: 0\n') });
      assert.equal(normal.broadcast.delivery_thread_niceness, 0);
      for (const value of ['20', '-1', '2.5', 'low']) {
        configError(
          () => loadConfig({ SWITCHYARD_CONFIG: file(`broadcast:\n  delivery_thread_niceness: ${value}\n`) }),
          /broadcast\.delivery_thread_niceness/,
        );
      }
    });

    it('refuses a providers section that is not a mapping', () => {
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('providers:\n  - openai\n') }), /providers/);
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('providers: openai\n') }), /providers/);
      configError(
        () =>
          loadConfig({
            SWITCHYARD_CONFIG: file('providers:\n  openai: yes\n'),
            OPENAI_API_KEY: 'sk-env',
          }),
        /providers\.openai/,
      );
    });

    it('refuses a variable reference that is not set, naming the variable and where it is used', () => {
      const path = file(`providers:\n  openai:\n    api_key: ${ref('MISSING_OPENAI_VAR')}\n`);
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: path }),
        /MISSING_OPENAI_VAR/,
        /providers\.openai\.api_key/,
      );
    });

    it('lets the environment win over the file', () => {
      const path = file('port: 7000\nhost: 10.0.0.1\ndatabase_url: sqlite:/tmp/from-file.db\n');
      const config = loadConfig({ SWITCHYARD_CONFIG: path, PORT: '9000', HOST: '0.0.0.0' });
      assert.equal(config.port, 9000);
      assert.equal(config.host, '0.0.0.0');
      assert.equal(config.database_url, 'sqlite:/tmp/from-file.db');
    });

    it('fills providers.<name>.api_key from <NAME>_API_KEY, but a key in the file wins', () => {
      const fromEnv = loadConfig({
        OPENAI_API_KEY: 'sk-env-openai',
        AMAZON_BEDROCK_API_KEY: 'sk-env-bedrock',
      });
      assert.equal(fromEnv.providers.openai?.api_key, 'sk-env-openai');
      assert.equal(fromEnv.providers['amazon-bedrock']?.api_key, 'sk-env-bedrock');

      const path = file(
        'providers:\n  openai:\n    api_key: sk-file-openai\n  amazon-bedrock:\n    base_url: https://bedrock.example\n',
      );
      const both = loadConfig({
        SWITCHYARD_CONFIG: path,
        OPENAI_API_KEY: 'sk-env-openai',
        AMAZON_BEDROCK_API_KEY: 'sk-env-bedrock',
      });
      assert.equal(both.providers.openai?.api_key, 'sk-file-openai');
      // The file names bedrock without a key: the environment's key is added, the base_url kept.
      assert.deepEqual(both.providers['amazon-bedrock'], {
        base_url: 'https://bedrock.example',
        api_key: 'sk-env-bedrock',
      });
    });

    it('does not turn SWITCHYARD_* or empty *_API_KEY variables into providers', () => {
      const config = loadConfig({ SWITCHYARD_ADMIN_API_KEY: 'x', EMPTY_API_KEY: '' });
      assert.deepEqual(config.providers, {});
    });

    it('refuses a file that is not valid YAML, naming the file', () => {
      const path = file('providers:\n  openai: {base_url: [unclosed\n');
      const message = configError(() => loadConfig({ SWITCHYARD_CONFIG: path }), /not valid YAML/);
      assert.ok(message.includes(path), message);
    });

    it('refuses a JSON file that is not valid JSON, naming the file', () => {
      const path = file('{"port": 80,', 'json');
      const message = configError(() => loadConfig({ SWITCHYARD_CONFIG: path }), /not valid JSON/);
      assert.ok(message.includes(path), message);
    });

    it('refuses a file whose top level is an array or a scalar', () => {
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('- port: 8080\n- host: x\n') }),
        /must hold an object at the top level/,
      );
      configError(() => loadConfig({ SWITCHYARD_CONFIG: file('[1, 2]', 'json') }), /object at the top level/);
      configError(
        () => loadConfig({ SWITCHYARD_CONFIG: file('just a string\n') }),
        /object at the top level/,
      );
    });

    it('refuses a missing file, naming its path', () => {
      const path = join(directory, 'does-not-exist.yaml');
      const message = configError(() => loadConfig({ SWITCHYARD_CONFIG: path }), /cannot read config file/);
      assert.ok(message.includes(path), message);
    });
  });

  describe('the result', () => {
    it('is deeply frozen', () => {
      const path = file('providers:\n  openai:\n    api_key: sk-x\n');
      const config = loadConfig({ SWITCHYARD_CONFIG: path });
      assert.ok(Object.isFrozen(config));
      assert.ok(Object.isFrozen(config.providers));
      assert.ok(Object.isFrozen(config.providers.openai));
      assert.ok(Object.isFrozen(config.credits));
      assert.ok(Object.isFrozen(config.limits));
      assert.ok(Object.isFrozen(config.limits.rate_limit));
      // ESM modules are strict: assigning to a frozen object throws.
      assert.throws(() => {
        (config as { port: number }).port = 1;
      }, TypeError);
      assert.throws(() => {
        (config.limits.rate_limit as { requests: number }).requests = 1;
      }, TypeError);
      assert.equal(config.port, 8080);
    });

    it('leaves the built-in defaults untouched by a load with overrides', () => {
      const first = loadConfig({}, { credits: { initial: 5 }, limits: { rate_limit: { requests: 1 } } });
      assert.equal(first.credits.initial, 5);
      assert.deepEqual(first.limits.rate_limit, { requests: 1, window_seconds: 60 });
      assert.equal(defaultConfig.credits.initial, 0);
      assert.equal(defaultConfig.limits.rate_limit.requests, 600);
      assert.equal(Object.isFrozen(defaultConfig.limits), false, 'loading never freezes the defaults');
      const second = loadConfig({});
      assert.equal(second.credits.initial, 0);
      assert.equal(second.limits.rate_limit.requests, 600);
    });
  });
});
