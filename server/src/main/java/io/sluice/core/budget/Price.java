package io.sluice.core.budget;

import java.math.BigInteger;
import java.time.Instant;
import java.util.Objects;

/**
 * A model's price from {@code from} on, per one million tokens, in nano-units of the budget's
 * currency (1 USD = 1,000,000,000): exact for any price with up to nine decimals per token.
 *
 * @param from when the price takes effect
 * @param input per 1M prompt tokens not read from the cache
 * @param output per 1M output tokens
 * @param cachedInput per 1M prompt tokens read from the cache
 */
public record Price(Instant from, long input, long output, long cachedInput) {
  private static final long MILLION = 1_000_000L;

  public Price {
    Objects.requireNonNull(from, "from");
    if (input < 0 || output < 0 || cachedInput < 0) {
      throw new IllegalArgumentException(
          "price below 0: " + input + "/" + output + "/" + cachedInput);
    }
  }

  /** What {@code use} costs, in nano-units, rounded up (a charge is never under its price). */
  public long cost(TokenUse use) {
    return part(use.uncachedInput(), input)
        + part(use.output(), output)
        + part(use.cachedInput(), cachedInput);
  }

  private static long part(long tokens, long perMillion) {
    if (tokens == 0 || perMillion == 0) {
      return 0;
    }
    try {
      long product = Math.multiplyExact(tokens, perMillion);
      return Math.floorDiv(product + MILLION - 1, MILLION);
    } catch (ArithmeticException overflow) {
      BigInteger[] qr =
          BigInteger.valueOf(tokens)
              .multiply(BigInteger.valueOf(perMillion))
              .divideAndRemainder(BigInteger.valueOf(MILLION));
      BigInteger q = qr[1].signum() > 0 ? qr[0].add(BigInteger.ONE) : qr[0];
      return q.bitLength() < 63 ? q.longValue() : Long.MAX_VALUE;
    }
  }
}
