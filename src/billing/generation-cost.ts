import type { Usage } from '../spec/usage.js';
import { scaledPrice } from './decimal-price.js';

/** Prices of one endpoint as the catalogue gives them: decimal strings of USD per token or request. */
export interface EndpointPricing {
  prompt: string;
  completion: string;
  input_cache_read?: unknown;
  input_cache_write?: unknown;
  internal_reasoning?: unknown;
  /** Per output token of a generated image (Gemini's image models: twelve times the completion price). */
  image_output?: unknown;
  request?: unknown;
  /**
   * The provider's discount off its standard price, for display only: the catalogue's prices are
   * already discounted (streamlake lists $0.177132/M for a $1.74/M model at discount 0.8982).
   */
  discount?: unknown;
}

export interface GenerationCost {
  /** Everything, in nano-dollars. */
  totalNanos: number;
  /** The part for input tokens (uncached, cache reads, cache writes) and the per-request price. */
  inputNanos: number;
  /** The part for output tokens, reasoning and images included. */
  outputNanos: number;
}

const NANOS = 10n ** 9n;

/** A price that may be absent: falls back to `fallback` (cache reads without their own price cost as input). */
const priceOr = (value: unknown, fallback: bigint): bigint => scaledPrice(value) ?? fallback;

/**
 * Rounds 1e-18 USD to nano-dollars, half up: the only rounding in a generation's cost. An upstream
 * reporting absurd usage cannot push a cost past what a JS number holds exactly ($9M).
 */
const MAX_NANOS = BigInt(Number.MAX_SAFE_INTEGER);
const toNanos = (attoDollars: bigint): number => {
  const nanos = (attoDollars + NANOS / 2n) / NANOS;
  return Number(nanos > MAX_NANOS ? MAX_NANOS : nanos);
};

/**
 * The cost of one generation from the endpoint's prices and the upstream's reported usage, exact to
 * the nano-dollar: prices are decimal strings, so the sum is taken in integers of 1e-18 USD and
 * rounded once. Cached reads and cache writes use their own prices where the endpoint has them;
 * reasoning tokens use `internal_reasoning` and image tokens `image_output` where they exist, the
 * completion price otherwise.
 */
export function generationCost(pricing: EndpointPricing, usage: Usage): GenerationCost {
  const prompt = scaledPrice(pricing.prompt) ?? 0n;
  const completion = scaledPrice(pricing.completion) ?? 0n;
  const cacheRead = priceOr(pricing.input_cache_read, prompt);
  const cacheWrite = priceOr(pricing.input_cache_write, prompt);
  const reasoning = priceOr(pricing.internal_reasoning, completion);
  const perRequest = priceOr(pricing.request, 0n);

  const cached = BigInt(Math.min(usage.cachedInputTokens, usage.inputTokens));
  const written = BigInt(Math.min(usage.cacheWriteTokens, usage.inputTokens - Number(cached)));
  const uncached = BigInt(usage.inputTokens) - cached - written;
  const reasoningTokens = BigInt(Math.min(usage.reasoningTokens, usage.outputTokens));
  // Images are answer, not reasoning: they come out of what reasoning leaves. Most answers hold none.
  const imageTokens = usage.imageOutputTokens
    ? BigInt(Math.min(usage.imageOutputTokens, usage.outputTokens - Number(reasoningTokens)))
    : 0n;
  const answerTokens = BigInt(usage.outputTokens) - reasoningTokens - imageTokens;

  const input = uncached * prompt + cached * cacheRead + written * cacheWrite + perRequest;
  let output = answerTokens * completion + reasoningTokens * reasoning;
  if (imageTokens > 0n) output += imageTokens * priceOr(pricing.image_output, completion);
  const inputNanos = toNanos(input);
  const outputNanos = toNanos(output);
  return { totalNanos: toNanos(input + output), inputNanos, outputNanos };
}

/**
 * The most a request can cost on an endpoint: every prompt token at the dearest input price and
 * every allowed output token at the dearest output price, plus the per-request price. This is what
 * reserve-then-settle reserves before the upstream call. `mayOutputImages`: the answer may hold
 * images, whose tokens count among the output's at the `image_output` price (for Gemini's image
 * models twelve times the completion price), so that price is the dearest when it is higher.
 */
export function worstCaseCost(
  pricing: EndpointPricing,
  bounds: { promptTokens: number; maxOutputTokens: number; mayOutputImages?: boolean },
): number {
  const prompt = scaledPrice(pricing.prompt) ?? 0n;
  const completion = scaledPrice(pricing.completion) ?? 0n;
  const dearestInput = [prompt, priceOr(pricing.input_cache_write, prompt)].reduce((a, b) => (a > b ? a : b));
  let dearestOutput = [completion, priceOr(pricing.internal_reasoning, completion)].reduce((a, b) =>
    a > b ? a : b,
  );
  if (bounds.mayOutputImages) {
    const image = priceOr(pricing.image_output, completion);
    if (image > dearestOutput) dearestOutput = image;
  }
  const total =
    BigInt(bounds.promptTokens) * dearestInput +
    BigInt(bounds.maxOutputTokens) * dearestOutput +
    priceOr(pricing.request, 0n);
  // Rounded up: a reservation must never fall short of the cost it stands for. Capped at the largest
  // exact amount, which no limit reaches, so an absurd bound is refused with a 402, not an error.
  const nanos = (total + NANOS - 1n) / NANOS;
  return Number(nanos > MAX_NANOS ? MAX_NANOS : nanos);
}
