import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderError } from '../src/errors/error-renderer.js';

describe('database errors a client can cause by racing a delete', () => {
  it('renders a foreign-key violation on either backend as 404, not 500', () => {
    for (const code of ['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY']) {
      const error = Object.assign(new Error('insert or update violates foreign key constraint'), { code });
      const rendered = renderError(error);
      assert.equal(rendered.status, 404, code);
      assert.match(rendered.body.error.message, /deleted while this request ran/);
    }
    assert.equal(renderError(Object.assign(new Error('other'), { code: '23502' })).status, 500);
  });
});
