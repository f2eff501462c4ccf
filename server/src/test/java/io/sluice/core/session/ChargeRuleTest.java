package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The charge rule as a table (docs/estimation.md, "Reconciliation"): how an answer ended, what was
 * seen of it, what the tenant is charged, and whether it may teach the learned reserve. Every
 * request estimated 100 input tokens and reserved 500 output tokens.
 */
class ChargeRuleTest {
  private static final TokenEstimate ESTIMATE =
      new TokenEstimate(
          100, 500, TokenEstimate.METHOD_BYTES, null, "m", false, false, FanOut.NONE, -1);

  private static Usage usage(long in, long out) {
    return new Usage(in, out, 0, true);
  }

  /** An answer that began: status, body seen, stream, complete, metered, streamed, usage. */
  private static ChargeRule.Answer began(
      int status,
      boolean bodySeen,
      boolean stream,
      boolean complete,
      long metered,
      long streamed,
      Usage u) {
    return new ChargeRule.Answer(true, status, bodySeen, stream, complete, metered, streamed, u);
  }

  private static Charge charge(String rule, long in, long out, long metered) {
    return new Charge(rule, in, out, metered, 0);
  }

  private static Arguments row(
      String name, Outcome outcome, ChargeRule.Answer a, Charge expected, boolean teaches) {
    return Arguments.of(name, outcome, a, expected, teaches);
  }

  static Stream<Arguments> rows() {
    Outcome done = Outcome.COMPLETED;
    Outcome cancel = Outcome.CANCELLED;
    return Stream.of(
        row(
            "complete JSON answer with usage",
            done,
            began(200, true, false, true, 0, 40, usage(9, 40)),
            charge(Charge.REPORTED, 9, 40, 0),
            true),
        row(
            "shadow pass, complete JSON answer: charged as any request",
            done,
            began(200, true, false, true, 0, 40, usage(9, 40)),
            charge(Charge.REPORTED, 9, 40, 0),
            true),
        row(
            "complete JSON answer with cached input: the cached part kept",
            done,
            began(200, true, false, true, 0, 40, new Usage(2000, 40, 1536, true)),
            new Charge(Charge.REPORTED, 2000, 40, 0, 1536),
            true),
        row(
            "stream cut after its usage on the way: the reported input and its cached part",
            cancel,
            began(200, true, true, false, 30, 30, new Usage(2000, 2, 1536, true)),
            new Charge(Charge.STREAMED, 2000, 30, 30, 1536),
            false),
        row(
            "complete JSON answer, no usage reported",
            done,
            began(200, true, false, true, 0, 0, Usage.NONE),
            charge(Charge.RESERVE, 100, 500, 0),
            false),
        row(
            "complete stream with its final usage",
            done,
            began(200, true, true, true, 290, 300, usage(12, 300)),
            charge(Charge.REPORTED, 12, 300, 290),
            true),
        row(
            "complete stream, no usage: its metered text",
            done,
            began(200, true, true, true, 280, 280, Usage.NONE),
            charge(Charge.STREAMED, 100, 280, 280),
            true),
        row(
            "stream cut by the client after usage on the way",
            cancel,
            began(200, true, true, false, 120, 120, usage(15, 2)),
            charge(Charge.STREAMED, 15, 120, 120),
            false),
        row(
            "stream the upstream closed before its last event",
            done,
            began(200, true, true, false, 120, 120, usage(15, 2)),
            charge(Charge.STREAMED, 15, 120, 120),
            false),
        row(
            "stream cut, usage on the way without input: the estimated input",
            cancel,
            began(200, true, true, false, 50, 50, usage(0, 50)),
            charge(Charge.STREAMED, 100, 50, 50),
            false),
        row(
            "stream cut before any chunk",
            cancel,
            began(200, false, true, false, 0, 0, Usage.NONE),
            charge(Charge.STREAMED, 100, 0, 0),
            false),
        row(
            "overrun: a stream cut at four times its reserve",
            cancel,
            began(200, true, true, false, 2000, 2000, Usage.NONE),
            charge(Charge.STREAMED, 100, 2000, 2000),
            false),
        row(
            "overrun: a complete stream far past its reserve",
            done,
            began(200, true, true, true, 2380, 2400, usage(10, 2400)),
            charge(Charge.REPORTED, 10, 2400, 2380),
            true),
        row(
            "cancel before the first byte: the input only",
            cancel,
            new ChargeRule.Answer(false, 0, false, false, false, 0, 0, Usage.NONE),
            charge(Charge.NO_ANSWER, 100, 0, 0),
            false),
        row(
            "reset before response headers",
            Outcome.ERROR,
            new ChargeRule.Answer(false, 0, false, false, false, 0, 0, Usage.NONE),
            charge(Charge.NO_ANSWER, 100, 0, 0),
            false),
        row(
            "upstream error status, no usage: nothing",
            done,
            began(503, true, false, true, 0, 0, Usage.NONE),
            charge(Charge.UPSTREAM_ERROR, 0, 0, 0),
            false),
        row(
            "upstream error on a stream, no usage: nothing",
            cancel,
            began(500, true, true, false, 7, 7, Usage.NONE),
            charge(Charge.UPSTREAM_ERROR, 0, 0, 7),
            false),
        row(
            "upstream error with usage: the usage",
            done,
            began(400, true, false, true, 0, 0, usage(5, 0)),
            charge(Charge.REPORTED, 5, 0, 0),
            true),
        row(
            "answer unseen (response body mode NONE): the reservation",
            done,
            began(200, false, false, false, 0, 0, Usage.NONE),
            charge(Charge.RESERVE, 100, 500, 0),
            false),
        row(
            "JSON answer cut after its usage",
            cancel,
            began(200, true, false, false, 0, 40, usage(9, 40)),
            charge(Charge.REPORTED, 9, 40, 0),
            true),
        row(
            "JSON answer cut, no usage: the reservation",
            cancel,
            began(200, true, false, false, 0, 0, Usage.NONE),
            charge(Charge.RESERVE, 100, 500, 0),
            false),
        row(
            "JSON answer cut before its body",
            cancel,
            began(200, false, false, false, 0, 0, Usage.NONE),
            charge(Charge.RESERVE, 100, 500, 0),
            false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("rows")
  void chargesByHowTheAnswerEnded(
      String name, Outcome outcome, ChargeRule.Answer a, Charge expected, boolean teaches) {
    Charge c = ChargeRule.charge(outcome, ESTIMATE, a);
    assertThat(c).as(name).isEqualTo(expected);
    assertThat(ChargeRule.complete(c, a.complete()))
        .as(name + ": teaches the reserve")
        .isEqualTo(teaches);
  }
}
