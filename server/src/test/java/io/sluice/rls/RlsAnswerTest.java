package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitUnit;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/** The pre-encoded answer is byte for byte what protobuf-java writes for the same decision. */
class RlsAnswerTest {
  @Property(tries = 1000)
  void bytesEqualProtobufs(@ForAll("decisions") RlsDecision.Decided d) {
    byte[] expected = RlsProtoMapper.toResponse(d).toByteArray();
    assertThat(RlsAnswer.of(d).bytes()).isEqualTo(expected);
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

  @Provide
  Arbitrary<RlsDecision.Decided> decisions() {
    Arbitrary<RlsDecision.Code> code = Arbitraries.of(RlsDecision.Code.class);
    Arbitrary<LimitSpec> limit =
        Combinators.combine(
                Arbitraries.strings().withChars("ab_é\uD83D\uDE00").ofMaxLength(6),
                Arbitraries.of(RateLimitUnit.class),
                Arbitraries.longs().between(0, 10_000_000_000L))
            .as(
                (name, unit, rpu) ->
                    new LimitSpec(
                        name,
                        unit,
                        rpu,
                        1,
                        false,
                        false,
                        false,
                        false,
                        List.of(),
                        io.sluice.rls.config.Algorithm.FIXED_WINDOW,
                        java.util.Optional.empty(),
                        0,
                        "k"));
    Arbitrary<RlsDecision.Status> status =
        Combinators.combine(
                code,
                limit.injectNull(0.3),
                Arbitraries.oneOf(
                    Arbitraries.just(0L),
                    Arbitraries.just(RlsDecision.UNLIMITED_REMAINING),
                    Arbitraries.longs().between(0, 10_000_000_000L)),
                Arbitraries.oneOf(
                    Arbitraries.just(-1L),
                    Arbitraries.just(0L),
                    Arbitraries.longs().between(0, 1L << 40)))
            .as(RlsDecision.Status::new);
    Arbitrary<RlsDecision.Header> header =
        Combinators.combine(
                Arbitraries.strings().withChars("x-é").ofMaxLength(5),
                Arbitraries.strings().numeric().ofMaxLength(4))
            .as(RlsDecision.Header::new);
    return Combinators.combine(code, status.list().ofMaxSize(4), header.list().ofMaxSize(3))
        .as(RlsDecision.Decided::new);
  }
}
