import type { Usage } from '../spec/usage.js';
import { scaledPrice } from './decimal-price.js';

/** Prices of one endpoint as the catalogue gives them: decimal strings of USD per token or request. */
export interface EndpointPricing {
  prompt: string;
  completion: string;
  input_cache_read?: unknown;
  input_cache_write?: unknown;
  internal_reasoning?: unknown;
  request?: unknown;
  /** Fraction taken off the whole price (0 = none, 1 = free). */
  discount?: unknown;
}

export interface GenerationCost {
  /** Everything, in nano-dollars. */
  totalNanos: number;
  /** The part for input tokens (uncached, cache reads, cache writes) and the per-request price. */
  inputNanos: number;
  /** The part for output tokens, reasoning included. */
  outputNanos: number;
}

const SCALE = 10n ** 18n;
const NANOS = 10n ** 9n;

/** A price that may be absent: falls back to `fallback` (cache reads without their own price cost as input). */
const priceOr = (value: unknown, fallback: bigint): bigint => scaledPrice(value) ?? fallback;

/** Rounds 1e-18 USD to nano-dollars, half up: the only rounding in a generation's cost. */
const toNanos = (attoDollars: bigint): number => Number((attoDollars + NANOS / 2n) / NANOS);

function discountFactor(discount: unknown): bigint {
  if (typeof discount !== 'number' || !Number.isFinite(discount) || discount <= 0) return SCALE;
  if (discount >= 1) return 0n;
  // The shortest decimal spelling ("0.2"), not toFixed(18), which spells out float noise
  // ("0.200000000000000011"); tiny values print in exponent form and take the long route.
  const text = String(discount).includes('e') ? discount.toFixed(18) : String(discount);
  return SCALE - (scaledPrice(text) ?? 0n);
}

/**
 * The cost of one generation from the endpoint's prices and the upstream's reported usage, exact to
 * the nano-dollar: prices are decimal strings, so the sum is taken in integers of 1e-18 USD and
 * rounded once. Cached reads and cache writes use their own prices where the endpoint has them;
 * reasoning tokens use `internal_reasoning` where it exists and the completion price otherwise.
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
  const answerTokens = BigInt(usage.outputTokens) - reasoningTokens;

  const factor = discountFactor(pricing.discount);
  const input =
    ((uncached * prompt + cached * cacheRead + written * cacheWrite + perRequest) * factor) / SCALE;
  const output = ((answerTokens * completion + reasoningTokens * reasoning) * factor) / SCALE;
  const inputNanos = toNanos(input);
  const outputNanos = toNanos(output);
  return { totalNanos: toNanos(input + output), inputNanos, outputNanos };
}

/**
 * The most a request can cost on an endpoint: every prompt token at the dearest input price and
 * every allowed output token at the dearest output price, plus the per-request price. This is what
 * reserve-then-settle reserves before the upstream call.
 */
export function worstCaseCost(
  pricing: EndpointPricing,
  bounds: { promptTokens: number; maxOutputTokens: number },
): number {
  const prompt = scaledPrice(pricing.prompt) ?? 0n;
  const completion = scaledPrice(pricing.completion) ?? 0n;
  const dearestInput = [prompt, priceOr(pricing.input_cache_write, prompt)].reduce((a, b) => (a > b ? a : b));
  const dearestOutput = [completion, priceOr(pricing.internal_reasoning, completion)].reduce((a, b) =>
    a > b ? a : b,
  );
  const total =
    BigInt(bounds.promptTokens) * dearestInput +
    BigInt(bounds.maxOutputTokens) * dearestOutput +
    priceOr(pricing.request, 0n);
  // Rounded up: a reservation must never fall short of the cost it stands for.
  return Number((total + NANOS - 1n) / NANOS);
}
