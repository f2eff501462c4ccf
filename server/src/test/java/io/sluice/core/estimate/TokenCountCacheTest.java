package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.testing.Seeded;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TokenCountCacheTest {
  private static final String SYSTEM =
      "You are a careful assistant for an airline. Answer in two sentences, cite the fare rules"
          + " by number, and never promise a refund.";

  @Test
  void count_repeatedPiece_tokenizedOnceThenHit() {
    TokenCountCache cache = new TokenCountCache(1 << 20, 32);
    int direct = ModelEncodings.o200k().countTokensOrdinary(SYSTEM);

    assertThat(cache.count(ModelEncodings.o200k(), SYSTEM)).isEqualTo(direct);
    assertThat(cache.count(ModelEncodings.o200k(), new String(SYSTEM))).isEqualTo(direct);

    assertThat(cache.misses()).isEqualTo(1);
    assertThat(cache.hits()).isEqualTo(1);
    assertThat(cache.entries()).isEqualTo(1);
    assertThat(cache.weightedChars())
        .isEqualTo(SYSTEM.length() + TokenCountCache.ENTRY_OVERHEAD_CHARS);
  }

  @Test
  void count_shortPiece_countedWithoutLookup() {
    TokenCountCache cache = new TokenCountCache(1 << 20, 32);
    assertThat(cache.count(ModelEncodings.o200k(), "hello world")).isEqualTo(2);
    assertThat(cache.hits() + cache.misses()).isZero();
    assertThat(cache.entries()).isZero();
  }

  @Test
  void count_sameTextOtherEncoding_isItsOwnEntry() {
    // digits split differently: o200k and cl100k disagree on this text
    String text = "1234567890123456789012345678901234567890 tokens, 😀 and ünïcödé";
    TokenCountCache cache = new TokenCountCache(1 << 20, 8);
    int o200k = ModelEncodings.o200k().countTokensOrdinary(text);
    int cl100k = ModelEncodings.cl100k().countTokensOrdinary(text);
    assertThat(o200k).isNotEqualTo(cl100k);

    assertThat(cache.count(ModelEncodings.o200k(), text)).isEqualTo(o200k);
    assertThat(cache.count(ModelEncodings.cl100k(), text)).isEqualTo(cl100k);
    assertThat(cache.count(ModelEncodings.cl100k(), text)).isEqualTo(cl100k);
    assertThat(cache.misses()).isEqualTo(2);
    assertThat(cache.hits()).isEqualTo(1);
  }

  @Test
  void count_manyPieces_weightStaysUnderTheBound() {
    long max = 20_000;
    TokenCountCache cache = new TokenCountCache(max, 0);
    for (int i = 0; i < 2_000; i++) {
      String piece = "message number " + i + " " + "x".repeat(i % 300);
      assertThat(cache.count(ModelEncodings.cl100k(), piece))
          .isEqualTo(ModelEncodings.cl100k().countTokensOrdinary(piece));
    }
    assertThat(cache.weightedChars()).isLessThanOrEqualTo(max).isPositive();
  }

  @Test
  void count_pieceHeavierThanTheWholeCache_notKept() {
    TokenCountCache cache = new TokenCountCache(100, 0);
    String big = "y".repeat(200);
    assertThat(cache.count(ModelEncodings.cl100k(), big))
        .isEqualTo(ModelEncodings.cl100k().countTokensOrdinary(big));
    assertThat(cache.entries()).isZero();
  }

  @Test
  void resize_toZero_emptiesAndStopsCaching() {
    TokenCountCache cache = new TokenCountCache(1 << 20, 0);
    cache.count(ModelEncodings.o200k(), SYSTEM);
    assertThat(cache.entries()).isEqualTo(1);

    cache.resize(0, 0);
    cache.count(ModelEncodings.o200k(), SYSTEM);

    assertThat(cache.entries()).isZero();
    assertThat(cache.maxChars()).isZero();
    assertThat(cache.hits()).isZero();

    cache.resize(1 << 20, 16);
    cache.count(ModelEncodings.o200k(), SYSTEM);
    cache.count(ModelEncodings.o200k(), SYSTEM);
    assertThat(cache.hits()).isEqualTo(1);
    assertThat(cache.minChars()).isEqualTo(16);
  }

  @Test
  void disabled_neverLooksUp() {
    TokenCountCache cache = TokenCountCache.disabled();
    cache.count(ModelEncodings.o200k(), SYSTEM);
    cache.count(ModelEncodings.o200k(), SYSTEM);
    assertThat(cache.hits() + cache.misses()).isZero();
  }

  @Test
  void constructor_badBounds_nameTheField() {
    assertThatThrownBy(() -> new TokenCountCache(-1, 0))
        .hasMessage("tokenCacheChars: -1 (expected: >= 0; 0 = off)");
    assertThatThrownBy(() -> new TokenCountCache(0, -2))
        .hasMessage("tokenCacheMinChars: -2 (expected: >= 0)");
  }

  record Bodies(String system, String user, int minChars, boolean cl100k) {}

  /** Whatever the body, an estimate through the cache (cold, then warm) is the uncached one. */
  @Test
  void estimate_withCache_equalsWithout() {
    Seeded.forAll(
        0x5EED_1201L,
        200,
        g -> new Bodies(g.anyString(400), g.anyString(400), g.intBetween(0, 64), g.bool()),
        c -> {
          String body =
              "{\"model\":\""
                  + (c.cl100k() ? "gpt-4-turbo" : "gpt-4o")
                  + "\",\"messages\":[{\"role\":\"system\",\"content\":"
                  + json(c.system())
                  + "},{\"role\":\"user\",\"content\":"
                  + json(c.user())
                  + "}]}";
          byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
          EstimateLimits limits = new EstimateLimits(100, 1000);
          TokenEstimate plain =
              TokenEstimator.uncached(EstimatorSettings.defaults())
                  .estimate(RequestFormat.AUTO, bytes, limits);
          TokenEstimator cached =
              new TokenEstimator(
                  EstimatorSettings.defaults(), new TokenCountCache(1 << 20, c.minChars()), null);

          assertThat(cached.estimate(RequestFormat.AUTO, bytes, limits)).isEqualTo(plain);
          assertThat(cached.estimate(RequestFormat.AUTO, bytes, limits)).isEqualTo(plain);
        });
  }

  private static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }
}
