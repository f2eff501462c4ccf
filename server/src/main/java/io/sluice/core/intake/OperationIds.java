package io.sluice.core.intake;

import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Operation ids: {@code resp_} and 32 lower-case hex digits (128 random bits from a {@link
 * SecureRandom}), so an id cannot be guessed and a malformed one is told apart without asking the
 * store.
 */
public final class OperationIds {
  /** The prefix every id starts with (OpenAI's Responses ids start so too). */
  public static final String PREFIX = "resp_";

  private static final int HEX = 32;
  private static final SecureRandom RANDOM = new SecureRandom();

  private OperationIds() {}

  /** A new id. */
  public static String next() {
    byte[] b = new byte[HEX / 2];
    RANDOM.nextBytes(b);
    return PREFIX + HexFormat.of().formatHex(b);
  }

  /** Whether {@code id} has the shape {@link #next} makes. */
  public static boolean valid(String id) {
    if (id.length() != PREFIX.length() + HEX || !id.startsWith(PREFIX)) {
      return false;
    }
    for (int i = PREFIX.length(); i < id.length(); i++) {
      char c = id.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }
}
