import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sliceWhole } from '../../src/platform/whole-characters.js';

test('sliceWhole cuts before a surrogate pair it would split, and nowhere else', () => {
  assert.equal(sliceWhole('abc', 5), 'abc');
  assert.equal(sliceWhole('abcdef', 3), 'abc');
  // 😀 is two UTF-16 units: a cut after the first would leave a lone high surrogate.
  assert.equal(sliceWhole('ab😀cd', 3), 'ab');
  assert.equal(sliceWhole('ab😀cd', 4), 'ab😀');
  assert.equal(sliceWhole('😀😀', 1), '');
});
