package io.sluice.core.session;

import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import org.jspecify.annotations.Nullable;

/**
 * What a request that ran is charged, by how its answer ended (docs/estimation.md,
 * "Reconciliation"): a pure function of the end's outcome, the estimate it ran with and what was
 * seen of its answer ({@link Answer}). No state; {@link ResponseMeter} gathers the answer.
 */
final class ChargeRule {
  private ChargeRule() {}

  /**
   * What was seen of the answer when the request ended.
   *
   * @param began whether an answer began (response headers came)
   * @param status the upstream's status (0 before its response headers)
   * @param bodySeen whether any response body chunk came
   * @param stream whether the answer is an event stream
   * @param complete whether the answer's own end was seen (its last event, or a whole JSON body)
   * @param metered output tokens counted from the streamed text
   * @param streamed output tokens the stream showed so far (usage reported on the way, or metered)
   * @param usage the usage the response reported ({@link Usage#NONE} when none)
   */
  record Answer(
      boolean began,
      int status,
      boolean bodySeen,
      boolean stream,
      boolean complete,
      long metered,
      long streamed,
      Usage usage) {}

  /**
   * The reported usage of a complete answer; for a request cut before any answer began, its input;
   * nothing for an upstream error without usage; for a stream cut short (or complete without
   * usage), the output streamed (the larger of the usage reported on the way and the metered text)
   * and the reported or estimated input; the reservation for an answer Sluice could not see
   * (response body mode NONE, a JSON body without usage).
   */
  static Charge charge(Outcome outcome, TokenEstimate e, Answer a) {
    Usage u = a.usage();
    long metered = a.metered();
    // A stream's usage is final only with its last event: one that ended without it (an upstream
    // that closed mid-answer) reported at most its usage on the way (Anthropic's message_start:
    // output_tokens 2), and is charged below as a stream cut short.
    if (u.reported()
        && (a.complete() || (outcome == Outcome.COMPLETED && a.bodySeen() && !a.stream()))) {
      return reported(u, metered);
    }
    if (!a.began()) { // no answer began: the prompt went upstream, nothing came back
      return noAnswer(e.inputTokens());
    }
    if (a.status() >= 400 && !u.reported()) {
      return new Charge(Charge.UPSTREAM_ERROR, 0, 0, metered, 0);
    }
    if (!a.bodySeen() && outcome == Outcome.COMPLETED) { // the answer went by unseen
      return new Charge(Charge.RESERVE, e.inputTokens(), e.outputReserveTokens(), 0, 0);
    }
    if (a.stream()) { // what the stream showed is what was produced
      boolean told = u.reported() && u.inputTokens() > 0;
      return new Charge(
          Charge.STREAMED,
          told ? u.inputTokens() : e.inputTokens(),
          a.streamed(),
          metered,
          told ? u.cachedInputTokens() : 0);
    }
    if (u.reported()) { // a JSON answer cut after its usage
      return reported(u, metered);
    }
    return new Charge(Charge.RESERVE, e.inputTokens(), e.outputReserveTokens(), metered, 0);
  }

  // the last no-answer charge: an immutable value, the same for every request of that input (the
  // one-shot request, and every cancel before the response headers, ends so)
  private static volatile @Nullable Charge lastNoAnswer;

  /** {@link Charge#NO_ANSWER} of {@code inputTokens}: the last one made when it is that value. */
  private static Charge noAnswer(long inputTokens) {
    Charge last = lastNoAnswer;
    if (last != null && last.inputTokens() == inputTokens) {
      return last;
    }
    Charge made = new Charge(Charge.NO_ANSWER, inputTokens, 0, 0, 0);
    lastNoAnswer = made;
    return made;
  }

  private static Charge reported(Usage u, long metered) {
    return new Charge(
        Charge.REPORTED, u.inputTokens(), u.outputTokens(), metered, u.cachedInputTokens());
  }

  /**
   * Whether the answer's own end was seen and its output is known: a complete answer with its
   * reported usage, or a complete stream whose text was metered (no usage sent). Only those teach
   * the learned reserve: a cut answer would teach it its cut.
   */
  static boolean complete(Charge c, boolean answerComplete) {
    return c.rule().equals(Charge.REPORTED) || (c.rule().equals(Charge.STREAMED) && answerComplete);
  }
}
