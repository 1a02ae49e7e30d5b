import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detectPersonNames } from '../../../src/gateway/pipeline/content-filters/detectors/person-name.js';
import { detectAddresses } from '../../../src/gateway/pipeline/content-filters/detectors/street-address.js';
import {
  createLanguageBudget,
  LANGUAGE_SLICE_CHARACTERS,
} from '../../../src/gateway/pipeline/content-filters/language-analysis.js';
import { sliceText } from '../../../src/gateway/pipeline/content-filters/text-slices.js';
import { matched } from './detect-helper.js';

function expectFound(detector: Parameters<typeof matched>[0], cases: Record<string, string[]>) {
  for (const [text, expected] of Object.entries(cases)) {
    assert.deepEqual(matched(detector, text), expected, JSON.stringify(text));
  }
}

describe('person-name detector (compromise)', () => {
  it('finds full names, honorifics, possessives and names addressed directly', () => {
    expectFound(detectPersonNames, {
      'Please email John Smith about the invoice.': ['John Smith'],
      'Dr. Jane Doe will see you.': ['Dr. Jane Doe'],
      "John Smith's car is red.": ['John Smith'],
      'Talk to Wei Zhang and Ludwig van Beethoven.': ['Wei Zhang', 'Ludwig van Beethoven'],
      'Contact Ms. Okafor today.': ['Ms. Okafor'],
      'Mary said it was fine.': ['Mary'],
      'Hope you are well, Jack.': ['Jack'],
      'Hi 👋 John Smith here': ['John Smith'],
    });
  });

  it('leaves capitalised common words, places and products alone', () => {
    expectFound(detectPersonNames, {
      'Grace period ends on Friday.': [],
      'Mark the date in your calendar.': [],
      'Will you help me?': [],
      'Bill the customer for April.': [],
      'The Rose Bowl is in Pasadena.': [],
      'The Summer sale starts Monday.': [],
      'We went to Paris in May.': [],
      'Apple released a new iPhone.': [],
      'Please Review The Attached Document Carefully.': [],
      'no capitals here at all': [],
    });
  });
});

describe('address detector (pattern and compromise)', () => {
  it('finds street addresses with unit, city, state and ZIP, and PO boxes', () => {
    expectFound(detectAddresses, {
      'Ship it to 1600 Pennsylvania Avenue NW, Washington, DC 20500 by Friday.': [
        '1600 Pennsylvania Avenue NW, Washington, DC 20500',
      ],
      'I live at 42 Baker Street, London.': ['42 Baker Street, London'],
      '123 Main Street Apt 4B, Springfield, IL 62704': ['123 Main Street Apt 4B, Springfield, IL 62704'],
      'meet at 350 5th Ave, New York, NY 10118': ['350 5th Ave, New York, NY 10118'],
      'Mail 500 Market St, St. Louis, MO 63101.': ['500 Market St, St. Louis, MO 63101'],
      'PO Box 1234 or P.O. Box 77': ['PO Box 1234', 'P.O. Box 77'],
      '221B Baker Street': ['221B Baker Street'],
    });
  });

  it('adds what compromise knows beyond the pattern (a lower-case street)', () => {
    expectFound(detectAddresses, { 'ship to 4 main st. please': ['4 main st'] });
  });

  it('leaves cities alone, numbers without a street, and routes', () => {
    expectFound(detectAddresses, {
      'We went to Paris in 2019.': [],
      'I have 3 apples on Main Street': [],
      'We sold 5 units': [],
      'Route 66': [],
    });
  });
});

describe('NLP budget', () => {
  const sentence = 'Please email John Smith about it. ';

  it('parses long texts in slices, finding names across the whole text within budget', () => {
    const text = sentence.repeat(200); // 6,800 characters, four slices
    const budget = createLanguageBudget(10_000);
    const findings = budget.analyse(text);
    assert.equal(findings.complete, true);
    assert.equal(findings.people.length, 200);
    for (const span of findings.people) assert.equal(text.slice(span.start, span.end), 'John Smith');
  });

  it('stops when the budget is spent and says so; the same text is parsed once', () => {
    const text = sentence.repeat(200);
    const budget = createLanguageBudget(LANGUAGE_SLICE_CHARACTERS);
    const findings = budget.analyse(text);
    assert.equal(findings.complete, false);
    assert.ok(findings.people.length > 0 && findings.people.length < 200);
    assert.equal(budget.analyse(text), findings);
    assert.equal(budget.analyse(sentence.repeat(3)).complete, false, 'too little left for another text');
  });

  it('cuts slices at sentence ends, then whitespace, covering the text exactly', () => {
    const text = `${'word '.repeat(30)}End. ${'x'.repeat(90)}`;
    const slices = sliceText(text, 100);
    assert.equal(slices[0]!.start, 0);
    assert.equal(slices.at(-1)!.end, text.length);
    for (let index = 1; index < slices.length; index += 1)
      assert.equal(slices[index]!.start, slices[index - 1]!.end);
    assert.deepEqual(sliceText('Hello there. General Kenobi', 16), [
      { start: 0, end: 13 },
      { start: 13, end: 27 },
    ]);
    assert.deepEqual(sliceText('aaaa bbbb cccc', 12), [
      { start: 0, end: 10 },
      { start: 10, end: 14 },
    ]);
    assert.deepEqual(sliceText('x'.repeat(10), 4), [
      { start: 0, end: 4 },
      { start: 4, end: 8 },
      { start: 8, end: 10 },
    ]);
  });
});
