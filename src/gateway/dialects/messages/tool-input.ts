import { MAX_JSON_DEPTH, pathTooDeepIn } from '../../../platform/json-depth.js';

/**
 * A tool call's `input` as a Messages client gets it, streamed (`input_json_delta` fragments) and
 * whole (the `tool_use` block's object), the same both ways.
 *
 * Arguments are JSON text that may not be JSON: cut off (max_tokens stopped the model in the middle
 * of them) or malformed (`\d` from a regular expression, a raw line break inside a string, the
 * object written twice). Anthropic streams a call cut by max_tokens as it is, and the official
 * TypeScript SDK's MessageStream reads the fragments it accumulated with a partial-JSON parser that
 * keeps the members completed before the cut (`{"city": "Paris", "unit": "cel` reads as
 * `{"city": "Paris"}`); but malformed text makes that parser throw, and the whole stream with it.
 * (test/gateway/dialects/messages-tool-input.test.ts holds this reading to the SDK's parser.) So the stream gives the client
 * the longest beginning of the arguments that is the beginning of a JSON object, all of them when
 * they are one, and withholds the rest; the whole answer's input is what the SDK reads of that
 * beginning. A client's `stop_reason` (`max_tokens`) still says when a call was cut.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const isWhitespace = (code: number) => code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
const isDigit = (code: number) => code >= ZERO && code <= NINE;
const isExponent = (code: number) => code === 0x65 || code === 0x45;
const isHex = (code: number) =>
  isDigit(code) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
/** The characters a backslash may escape in JSON: " \ / b f n r t (u is read apart). */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const LITERALS = new Map([
  [0x74, 'true'],
  [0x66, 'false'],
  [0x6e, 'null'],
]);

/** What the next character may be. */
const At = {
  /** Before the object: whitespace or `{`. */
  start: 0,
  /** After `{`: a key or `}`. */
  keyOrClose: 1,
  /** After a `,` in an object: a key. */
  key: 2,
  /** After a key: `:`. */
  colon: 3,
  /** After `:`, or a `,` in an array: a value. */
  value: 4,
  /** After `[`: a value or `]`. */
  valueOrClose: 5,
  /** After a value: `,` or the closing bracket. */
  afterValue: 6,
  /** After the object: whitespace only. */
  done: 7,
  string: 8,
  escape: 9,
  unicode: 10,
  number: 11,
  literal: 12,
} as const;
type At = (typeof At)[keyof typeof At];

/**
 * Where a number is: after a sign, a leading zero, integer digits, a point, fraction digits, an
 * exponent mark, its sign, its digits.
 */
const InNumber = {
  sign: 0,
  zero: 1,
  integer: 2,
  point: 3,
  fraction: 4,
  exponent: 5,
  exponentSign: 6,
  exponentDigits: 7,
} as const;
type InNumber = (typeof InNumber)[keyof typeof InNumber];
/** A number may end in these; in the others it still needs a digit. */
const isWholeNumber = (state: InNumber) =>
  state === InNumber.zero ||
  state === InNumber.integer ||
  state === InNumber.fraction ||
  state === InNumber.exponentDigits;

/**
 * Reads JSON text as it arrives and says how much of it is the beginning of a JSON object
 * (RFC 8259's grammar, leading whitespace allowed, nesting at most MAX_JSON_DEPTH levels as all
 * JSON the gateway takes in). Once a character could not continue one, it and everything after it
 * are refused. What it keeps grows with the nesting, not with the text.
 */
export class JsonObjectPrefix {
  private state: At = At.start;
  private faulted = false;
  /** Characters read so far (the offset of the next text fed). */
  private read = 0;
  /** Closing bracket of each open container, outermost first. */
  private readonly closers: number[] = [];
  /**
   * For each open container, the offset just past its last complete member or element, or past its
   * opening bracket: where a reading of the text cut short ends that container.
   */
  private readonly completeTo: number[] = [];
  private stringIsKey = false;
  private hexLeft = 0;
  private numberState: InNumber = InNumber.sign;
  private literal = '';
  private literalAt = 0;

  /**
   * Reads the next piece of the text; returns how many of its characters keep all of it the
   * beginning of a JSON object: all of them, fewer when one here could not continue it, 0 once an
   * earlier piece could not.
   */
  feed(text: string): number {
    if (this.faulted) return 0;
    for (let index = 0; index < text.length; index += 1) {
      if (!this.step(text.charCodeAt(index), this.read + index)) {
        this.faulted = true;
        this.read += index;
        return index;
      }
    }
    this.read += text.length;
    return text.length;
  }

  /**
   * The text read (`prefix`: exactly what `feed` accepted) made a JSON object the way the
   * TypeScript SDK's partial-JSON parser does: open containers closed after their last complete member or element,
   * a member whose value was not complete (a string or number cut off, a key without its value)
   * left out; `{}` when the object had not begun.
   */
  completion(prefix: string): string {
    if (this.state === At.start) return '{}';
    if (this.state === At.done) return prefix;
    let closing = '';
    for (let level = this.closers.length - 1; level >= 0; level -= 1)
      closing += String.fromCharCode(this.closers[level] as number);
    return prefix.slice(0, this.completeTo[this.completeTo.length - 1]) + closing;
  }

  private step(code: number, at: number): boolean {
    switch (this.state) {
      case At.start:
        if (isWhitespace(code)) return true;
        return code === OPEN_BRACE && this.open(CLOSE_BRACE, at);
      case At.done:
        return isWhitespace(code);
      case At.keyOrClose:
        if (isWhitespace(code)) return true;
        if (code === CLOSE_BRACE) return this.close(at);
        return this.startKey(code);
      case At.key:
        return isWhitespace(code) || this.startKey(code);
      case At.colon:
        if (isWhitespace(code)) return true;
        if (code !== COLON) return false;
        this.state = At.value;
        return true;
      case At.value:
        return isWhitespace(code) || this.startValue(code, at);
      case At.valueOrClose:
        if (isWhitespace(code)) return true;
        if (code === CLOSE_BRACKET) return this.close(at);
        return this.startValue(code, at);
      case At.afterValue: {
        if (isWhitespace(code)) return true;
        const closer = this.closers[this.closers.length - 1];
        if (code === closer) return this.close(at);
        if (code !== COMMA) return false;
        this.state = closer === CLOSE_BRACE ? At.key : At.value;
        return true;
      }
      case At.string:
        if (code === QUOTE) {
          if (this.stringIsKey) this.state = At.colon;
          else this.completeValue(at + 1);
          return true;
        }
        if (code === BACKSLASH) this.state = At.escape;
        // Control characters must be escaped inside a string.
        return code >= 0x20;
      case At.escape:
        if (code === 0x75) {
          this.state = At.unicode;
          this.hexLeft = 4;
          return true;
        }
        this.state = At.string;
        return SIMPLE_ESCAPES.has(code);
      case At.unicode:
        if (!isHex(code)) return false;
        this.hexLeft -= 1;
        if (this.hexLeft === 0) this.state = At.string;
        return true;
      case At.number:
        return this.stepNumber(code, at);
      case At.literal:
        if (code !== this.literal.charCodeAt(this.literalAt)) return false;
        this.literalAt += 1;
        if (this.literalAt === this.literal.length) this.completeValue(at + 1);
        return true;
    }
  }

  private startKey(code: number): boolean {
    if (code !== QUOTE) return false;
    this.state = At.string;
    this.stringIsKey = true;
    return true;
  }

  private startValue(code: number, at: number): boolean {
    if (code === OPEN_BRACE) return this.open(CLOSE_BRACE, at);
    if (code === OPEN_BRACKET) return this.open(CLOSE_BRACKET, at);
    if (code === QUOTE) {
      this.state = At.string;
      this.stringIsKey = false;
    } else if (code === MINUS || isDigit(code)) {
      this.state = At.number;
      this.numberState = code === MINUS ? InNumber.sign : code === ZERO ? InNumber.zero : InNumber.integer;
    } else {
      const literal = LITERALS.get(code);
      if (literal === undefined) return false;
      this.state = At.literal;
      this.literal = literal;
      this.literalAt = 1;
    }
    return true;
  }

  private stepNumber(code: number, at: number): boolean {
    const state = this.numberState;
    if (isDigit(code)) {
      if (state === InNumber.sign) this.numberState = code === ZERO ? InNumber.zero : InNumber.integer;
      else if (state === InNumber.point) this.numberState = InNumber.fraction;
      else if (state === InNumber.exponent || state === InNumber.exponentSign)
        this.numberState = InNumber.exponentDigits;
      // A leading zero takes no digits after it.
      else if (state === InNumber.zero) return false;
      return true;
    }
    if (code === DOT && (state === InNumber.zero || state === InNumber.integer)) {
      this.numberState = InNumber.point;
      return true;
    }
    if (
      isExponent(code) &&
      (state === InNumber.zero || state === InNumber.integer || state === InNumber.fraction)
    ) {
      this.numberState = InNumber.exponent;
      return true;
    }
    if ((code === PLUS || code === MINUS) && state === InNumber.exponent) {
      this.numberState = InNumber.exponentSign;
      return true;
    }
    // Anything else ends the number, when it can end here, and is read after it. When that
    // character is refused, the text given ends with the number: as its last characters could be
    // the first of a longer number, it is not complete (the SDK's reading leaves it out too).
    if (!isWholeNumber(state)) return false;
    const level = this.completeTo.length - 1;
    const before = this.completeTo[level] as number;
    this.completeValue(at);
    if (this.step(code, at)) return true;
    this.completeTo[level] = before;
    return false;
  }

  private open(closer: number, at: number): boolean {
    if (this.closers.length === MAX_JSON_DEPTH) return false;
    this.closers.push(closer);
    this.completeTo.push(at + 1);
    this.state = closer === CLOSE_BRACE ? At.keyOrClose : At.valueOrClose;
    return true;
  }

  private close(at: number): boolean {
    this.closers.pop();
    this.completeTo.pop();
    if (this.closers.length === 0) this.state = At.done;
    else this.completeValue(at + 1);
    return true;
  }

  /** A value ended just before `end`: its container is complete up to there. */
  private completeValue(end: number): void {
    this.completeTo[this.completeTo.length - 1] = end;
    this.state = At.afterValue;
  }
}

/**
 * Anthropic's `input` is a JSON object: the arguments when they are one; when they are not (cut off
 * by max_tokens, malformed, or nesting deeper than MAX_JSON_DEPTH, which the reply could not be
 * serialized with), what a streamed client reads of them: the members completed before the cut or
 * the fault, `{}` when none was. The reply always parses in a typed client.
 */
export function toolInput(argumentsText: string): Record<string, unknown> {
  const whole = parsedObject(argumentsText);
  if (whole !== undefined && !pathTooDeepIn(argumentsText, whole)) return whole;
  const reader = new JsonObjectPrefix();
  return parsedObject(reader.completion(argumentsText.slice(0, reader.feed(argumentsText)))) ?? {};
}

function parsedObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // Not JSON.
  }
  return undefined;
}
