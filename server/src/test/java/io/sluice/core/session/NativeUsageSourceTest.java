package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.estimate.NativeUsage;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The usage source of Envoy's token usage: preferred when usable, cross-checked, charged. */
class NativeUsageSourceTest {
  private static final TokenEstimate EST =
      new TokenEstimate(
          100, 500, TokenEstimate.METHOD_CONTENT_LENGTH, null, null, true, false, FanOut.NONE, -1);

  private final List<NativeCheck> noted = new ArrayList<>();

  /** What Sluice saw of an answer: a stream, complete or not, with its own usage or none. */
  private static ChargeRule.Answer own(boolean complete, Usage u, long streamed) {
    return new ChargeRule.Answer(true, 200, true, true, complete, streamed, streamed, u);
  }

  private Charge charge(ChargeRule.Answer own, NativeUsage n) {
    return ChargeRule.charge(Outcome.COMPLETED, EST, NativeUsageSource.prefer(own, n, noted::add));
  }

  @Test
  void complete_isChargedAsReported_andAgreesWithSluicesOwnParse() {
    Charge c =
        charge(
            own(true, new Usage(120, 40, 0, true), 40),
            new NativeUsage(121, 40, 0, NativeUsage.Status.COMPLETE));
    assertThat(c.rule()).isEqualTo(Charge.REPORTED);
    assertThat(c.inputTokens()).isEqualTo(121);
    assertThat(c.outputTokens()).isEqualTo(40);
    assertThat(noted).containsExactly(new NativeCheck("token_usage", "complete", "agree", true));
  }

  @Test
  void complete_withoutAnAnswerSluiceSaw_headersOnly_isChargedAsReported_unchecked() {
    ChargeRule.Answer unseen =
        new ChargeRule.Answer(true, 200, false, false, false, 0, 0, Usage.NONE);
    Charge c = charge(unseen, new NativeUsage(900, 77, 10, NativeUsage.Status.COMPLETE));
    assertThat(c.rule()).isEqualTo(Charge.REPORTED);
    assertThat(c.outputTokens()).isEqualTo(77);
    assertThat(noted)
        .containsExactly(new NativeCheck("token_usage", "complete", "unchecked", true));
  }

  @Test
  void partial_isALowerBound_unlessSluiceParsedTheWholeAnswer() {
    Charge cut =
        charge(own(false, Usage.NONE, 30), new NativeUsage(110, 20, 0, NativeUsage.Status.PARTIAL));
    assertThat(cut.rule()).isEqualTo(Charge.STREAMED);
    assertThat(cut.inputTokens()).isEqualTo(110);
    assertThat(cut.outputTokens()).as("the larger of the record and what streamed").isEqualTo(30);

    noted.clear();
    Charge whole =
        charge(
            own(true, new Usage(100, 60, 0, true), 60),
            new NativeUsage(100, 20, 0, NativeUsage.Status.PARTIAL));
    assertThat(whole.rule()).isEqualTo(Charge.REPORTED);
    assertThat(whole.outputTokens()).as("Sluice's own complete parse").isEqualTo(60);
    assertThat(noted).containsExactly(new NativeCheck("token_usage", "partial", "disagree", false));
  }

  @Test
  void failedOrCountless_changesNothing() {
    ChargeRule.Answer mine = own(true, new Usage(100, 60, 0, true), 60);
    assertThat(
            NativeUsageSource.prefer(
                mine, new NativeUsage(-1, -1, 0, NativeUsage.Status.FAILED), noted::add))
        .isSameAs(mine);
    assertThat(
            NativeUsageSource.prefer(
                mine, new NativeUsage(5, -1, 0, NativeUsage.Status.COMPLETE), noted::add))
        .isSameAs(mine);
    assertThat(NativeUsageSource.prefer(mine, null, noted::add)).isSameAs(mine);
    assertThat(noted)
        .containsExactly(
            new NativeCheck("token_usage", "failed", "unused", false),
            new NativeCheck("token_usage", "complete", "unused", false));
  }
}
