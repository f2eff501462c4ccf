package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The estimate source of Envoy's request info: at the headers, and beside a body estimate. */
class NativeEstimateTest {
  private static final EstimateLimits LIMITS = new EstimateLimits(100, 2000);

  private static TokenEstimate contentLength(long input) {
    return new TokenEstimate(
        input, 100, TokenEstimate.METHOD_CONTENT_LENGTH, null, null, false, false, FanOut.NONE, -1);
  }

  @Test
  void atHeaders_theDeclaredCapReplacesTheDefaultReserve_inputStaysTheContentLengths() {
    TokenEstimate e =
        NativeEstimate.atHeaders(
            contentLength(250), new NativeRequestInfo("gpt-4o", true, 900, 3, 2), LIMITS);
    assertThat(e.inputTokens()).isEqualTo(250);
    assertThat(e.outputReserveTokens()).isEqualTo(900);
    assertThat(e.method()).isEqualTo(NativeEstimate.METHOD_NATIVE);
    assertThat(e.model()).isEqualTo("gpt-4o");
    assertThat(e.stream()).isTrue();
    assertThat(e.fanOut()).isEqualTo(new FanOut(2, false, true));
    assertThat(e.outputClamped()).isFalse();
  }

  @Test
  void atHeaders_aCapOverTheClassMaximumIsClamped_andNothingDeclaredChangesNothing() {
    TokenEstimate e =
        NativeEstimate.atHeaders(
            contentLength(10), new NativeRequestInfo(null, null, 50_000, -1, -1), LIMITS);
    assertThat(e.outputReserveTokens()).isEqualTo(2000);
    assertThat(e.outputClamped()).isTrue();
    TokenEstimate base = contentLength(10);
    assertThat(NativeEstimate.atHeaders(base, NativeRequestInfo.NONE, LIMITS)).isSameAs(base);
  }

  @Test
  void withABody_agreementComparesModelCapAndTools() {
    TokenEstimate body =
        new TokenEstimate(
            40, 900, TokenEstimate.METHOD_BPE_O200K, null, "gpt-4o", false, false, FanOut.NONE, -1);
    assertThat(
            NativeEstimate.agrees(
                body, new NativeRequestInfo("gpt-4o", false, 900, 2, 0), LIMITS, 1))
        .isTrue();
    assertThat(
            NativeEstimate.agrees(
                body, new NativeRequestInfo("other", false, 900, 2, 0), LIMITS, 1))
        .isFalse();
    assertThat(
            NativeEstimate.agrees(body, new NativeRequestInfo(null, null, 800, -1, -1), LIMITS, 1))
        .isFalse();
    TokenEstimate preferred =
        NativeEstimate.preferred(body, new NativeRequestInfo(null, true, 800, -1, -1), LIMITS, 1);
    assertThat(preferred.inputTokens()).isEqualTo(40);
    assertThat(preferred.outputReserveTokens()).isEqualTo(800);
    assertThat(preferred.stream()).isTrue();
    assertThat(
            NativeEstimate.preferred(
                    body, new NativeRequestInfo(null, null, 800, -1, -1), LIMITS, 3)
                .outputReserveTokens())
        .as("n answers: the body's reserve for all of them")
        .isEqualTo(900);
  }

  @Test
  void records_refuseOutOfBoundValues_andDropAnOverlongModel() {
    assertThatThrownBy(() -> new NativeRequestInfo(null, null, -2, -1, -1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> new NativeUsage(NativeUsage.MAX_TOKENS + 1, 1, 0, NativeUsage.Status.COMPLETE))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new NativeRequestInfo("m".repeat(300), null, -1, -1, -1).model()).isNull();
    assertThat(new NativeUsage(-1, 5, 0, NativeUsage.Status.COMPLETE).usable()).isFalse();
    assertThat(new NativeUsage(3, 5, 0, NativeUsage.Status.FAILED).usable()).isFalse();
  }
}
