package io.sluice.core.estimate;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The estimate source for Envoy's native request info ({@link NativeRequestInfo}): at the request
 * headers it refines the content-length estimate (input from the body's size) with the declared
 * output cap, model, stream flag and tools; with a body estimate it is preferred for the fields it
 * declares (model, stream, output cap) and cross-checked against the body's own reading ({@link
 * #agrees}). The input count stays the content-length's or the body's: the request info carries
 * none. Stateless.
 */
public final class NativeEstimate {
  private NativeEstimate() {}

  /** The method of an estimate the request info refined ({@code TokenEstimate.method}). */
  public static final String METHOD_NATIVE = "native+content-length";

  /**
   * The estimate at the request headers: {@code base} (from content-length, or the default input
   * for an unknown size) with the declared output cap clamped to {@code limits}, model, stream flag
   * and tools.
   */
  public static TokenEstimate atHeaders(
      TokenEstimate base, NativeRequestInfo info, EstimateLimits limits) {
    Objects.requireNonNull(limits, "limits");
    if (!info.any()) {
      return base;
    }
    long reserve = base.outputReserveTokens();
    boolean clamped = base.outputClamped();
    if (info.maxOutputTokens() > 0) {
      reserve = Math.min(info.maxOutputTokens(), limits.maxOutputTokens());
      clamped = info.maxOutputTokens() > limits.maxOutputTokens();
    }
    String method =
        base.method().equals(TokenEstimate.METHOD_CONTENT_LENGTH) ? METHOD_NATIVE : base.method();
    return new TokenEstimate(
        base.inputTokens(),
        reserve,
        method,
        base.fallbackCause(),
        info.model() != null ? info.model() : base.model(),
        info.stream() != null ? info.stream() : base.stream(),
        clamped,
        fanOut(info, base.fanOut()),
        base.contentLengthBytes());
  }

  /**
   * The body's estimate with the request info preferred where it declares a field (model, stream
   * flag, the output cap of a single answer, {@code answers} 1); the input count and fan-out are
   * the body's own.
   */
  public static TokenEstimate preferred(
      TokenEstimate body, NativeRequestInfo info, EstimateLimits limits, int answers) {
    long reserve = body.outputReserveTokens();
    boolean clamped = body.outputClamped();
    if (answers == 1 && info.maxOutputTokens() > 0) {
      reserve = Math.min(info.maxOutputTokens(), limits.maxOutputTokens());
      clamped = info.maxOutputTokens() > limits.maxOutputTokens();
    }
    return new TokenEstimate(
        body.inputTokens(),
        reserve,
        body.method(),
        body.fallbackCause(),
        info.model() != null ? info.model() : body.model(),
        info.stream() != null ? info.stream() : body.stream(),
        clamped,
        body.fanOut(),
        -1);
  }

  /**
   * Whether the request info says what the body's own reading says: the same model (when both name
   * one), the same output reserve (when the info declares a cap and the body asks one answer), the
   * same number of tools (when declared). {@code body}: the body's estimate before any preference.
   */
  public static boolean agrees(
      TokenEstimate body, NativeRequestInfo info, EstimateLimits limits, int answers) {
    if (info.model() != null && body.model() != null && !info.model().equals(body.model())) {
      return false;
    }
    if (answers == 1 && info.maxOutputTokens() > 0) {
      long reserve = Math.min(info.maxOutputTokens(), limits.maxOutputTokens());
      if (reserve != body.outputReserveTokens()) {
        return false;
      }
    }
    return info.toolCount() < 0 || info.toolCount() == body.fanOut().tools();
  }

  private static FanOut fanOut(NativeRequestInfo info, FanOut base) {
    if (info.toolCount() <= 0) {
      return base;
    }
    // tools present and not turned off: the model may call several at once (the body scan's
    // default when parallel_tool_calls is absent); a forced choice is not declared
    return new FanOut(info.toolCount(), false, true);
  }

  /**
   * How far the {@code estimated} input is from the {@code actual} one, as a ratio of the actual
   * ({@code (estimated - actual) / max(actual, 1)}): negative when the estimate was short.
   */
  public static double inputError(long estimated, long actual) {
    return (double) (estimated - actual) / Math.max(actual, 1);
  }

  /** Whether two token counts agree within {@code 2 %} or 2 tokens, whichever is larger. */
  public static boolean close(long a, long b) {
    long d = Math.abs(a - b);
    return d <= Math.max(2, Math.max(a, b) / 50);
  }

  /** The request info of {@code info}, or {@link NativeRequestInfo#NONE}. */
  public static NativeRequestInfo orNone(@Nullable NativeRequestInfo info) {
    return info == null ? NativeRequestInfo.NONE : info;
  }
}
