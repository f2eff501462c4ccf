package io.sluice.core.session;

import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.estimate.NativeEstimate;
import io.sluice.core.estimate.NativeUsage;
import io.sluice.core.estimate.Usage;
import java.util.Locale;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The usage source for Envoy's native token usage ({@link NativeUsage}): what {@link ResponseMeter}
 * saw of the answer, with the native record preferred when it is usable, and cross-checked against
 * Sluice's own parse ({@link NativeCheck}). A {@code COMPLETE} record is the answer's usage
 * (charged as reported); a {@code PARTIAL} one is a lower bound (charged as a stream cut short: its
 * input, and the larger of its output and what Sluice saw streamed) unless Sluice's own parse of a
 * complete answer has it; a {@code FAILED} one, or one without both counts, changes nothing.
 * Stateless.
 */
final class NativeUsageSource {
  private NativeUsageSource() {}

  static ChargeRule.Answer prefer(
      ChargeRule.Answer own, @Nullable NativeUsage n, Consumer<NativeCheck> noted) {
    if (n == null) {
      return own;
    }
    String status = n.status().name().toLowerCase(Locale.ROOT);
    if (!n.usable()) {
      noted.accept(new NativeCheck(NativeCheck.TOKEN_USAGE, status, NativeCheck.UNUSED, false));
      return own;
    }
    Usage u = n.usage();
    Usage mine = own.usage();
    String agreement =
        !mine.reported()
            ? NativeCheck.UNCHECKED
            : NativeEstimate.close(mine.inputTokens(), u.inputTokens())
                    && NativeEstimate.close(mine.outputTokens(), u.outputTokens())
                ? NativeCheck.AGREE
                : NativeCheck.DISAGREE;
    boolean complete = n.status() == NativeUsage.Status.COMPLETE;
    if (!complete && mine.reported() && own.complete()) { // Sluice read the whole answer's usage
      noted.accept(new NativeCheck(NativeCheck.TOKEN_USAGE, status, agreement, false));
      return own;
    }
    noted.accept(new NativeCheck(NativeCheck.TOKEN_USAGE, status, agreement, true));
    long streamed = Math.max(own.streamed(), u.outputTokens());
    // Envoy saw the whole body (bodySeen): a complete record is charged as reported; a partial
    // one as a stream cut short (stream, not complete)
    return new ChargeRule.Answer(
        true, own.status(), true, own.stream() || !complete, complete, own.metered(), streamed, u);
  }
}
