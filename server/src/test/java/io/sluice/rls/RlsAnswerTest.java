package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitUnit;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pre-encoded answer is byte for byte what protobuf-java writes for the same decision. */
class RlsAnswerTest {
  @Test
  void bytesEqualProtobufs() {
    Seeded.forAll(
        0x5EED_0B01L,
        1000,
        RlsAnswerTest::decision,
        d -> {
          byte[] expected = RlsProtoMapper.toResponse(d).toByteArray();
          assertThat(RlsAnswer.of(d).bytes()).isEqualTo(expected);
        });
  }

  @Test
  void aTypicalAnswerParsesBack() {
    LimitSpec l = LimitSpec.override(RateLimitUnit.MINUTE, 60, "tenant");
    RlsDecision.Decided d =
        new RlsDecision.Decided(
            RlsDecision.Code.OVER_LIMIT,
            List.of(
                new RlsDecision.Status(RlsDecision.Code.OVER_LIMIT, l, 0, 42),
                RlsDecision.Status.UNLIMITED),
            List.of(new RlsDecision.Header("x-ratelimit-limit", "60")));
    assertThat(RlsAnswer.of(d).message()).isEqualTo(RlsProtoMapper.toResponse(d));
  }

  static RlsDecision.Decided decision(Gen g) {
    return new RlsDecision.Decided(
        g.anyOf(RlsDecision.Code.class),
        g.list(0, 4, () -> status(g)),
        g.list(
            0,
            3,
            () -> new RlsDecision.Header(g.string("x-é", 0, 5), g.string("0123456789", 0, 4))));
  }

  private static RlsDecision.Status status(Gen g) {
    RlsDecision.Code code = g.anyOf(RlsDecision.Code.class);
    LimitSpec limit = g.orNull(0.3, () -> limit(g));
    long remaining =
        switch (g.intBetween(0, 2)) {
          case 0 -> 0L;
          case 1 -> RlsDecision.UNLIMITED_REMAINING;
          default -> g.longBetween(0, 10_000_000_000L);
        };
    long resetSeconds =
        switch (g.intBetween(0, 2)) {
          case 0 -> -1L;
          case 1 -> 0L;
          default -> g.longBetween(0, 1L << 40);
        };
    return new RlsDecision.Status(code, limit, remaining, resetSeconds);
  }

  private static LimitSpec limit(Gen g) {
    return new LimitSpec(
        g.string("ab_é\uD83D\uDE00", 0, 6),
        g.anyOf(RateLimitUnit.class),
        g.longBetween(0, 10_000_000_000L),
        1,
        false,
        false,
        false,
        false,
        List.of(),
        io.sluice.rls.config.Algorithm.FIXED_WINDOW,
        java.util.Optional.empty(),
        0,
        "k");
  }
}
