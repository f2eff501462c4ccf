package io.sluice.observability;

import io.sluice.core.session.Signals;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * Whether a request's admission span is sampled, decided from the trace headers' text before
 * anything is built (docs/telemetry.md, "Sampling"): an unsampled request costs a few character
 * reads, no parsing into objects, no span builder, no ids. The SDK then samples every span it is
 * handed ({@code Sampler.alwaysOn}), so this is the one decision, and it is the one OpenTelemetry's
 * {@code parentbased_traceidratio} (or, without {@code followParent}, {@code traceidratio}) makes:
 *
 * <ul>
 *   <li>a valid parent (W3C {@code traceparent}, else B3 where read) with a sampling decision, and
 *       {@code followParent}: the parent's decision;
 *   <li>a valid parent otherwise: the ratio applied to the trace id's lower 64 bits, as {@code
 *       TraceIdRatioBasedSampler} does (so every service of the trace agrees);
 *   <li>no parent: a root span, sampled with probability {@code ratio}.
 * </ul>
 */
public final class TraceSampling {
  private final double ratio;
  private final long bound;
  private final boolean followParent;
  private final String traceparent;
  private final @Nullable String b3;
  private final @Nullable String b3TraceId;
  private final @Nullable String b3Sampled;

  /**
   * @param ratio the share of traces sampled (0..1)
   * @param followParent whether a parent's decision decides
   * @param traceparent the W3C traceparent's signal key, or null when W3C is not read
   * @param b3 B3's single header's signal key, or null when B3 is not read
   * @param b3TraceId B3's trace id header's signal key, or null
   * @param b3Sampled B3's sampled header's signal key, or null
   */
  public TraceSampling(
      double ratio,
      boolean followParent,
      @Nullable String traceparent,
      @Nullable String b3,
      @Nullable String b3TraceId,
      @Nullable String b3Sampled) {
    this.ratio = ratio;
    this.bound = bound(ratio);
    this.followParent = followParent;
    this.traceparent = traceparent == null ? "" : traceparent;
    this.b3 = b3;
    this.b3TraceId = b3TraceId;
    this.b3Sampled = b3Sampled;
  }

  /** {@code TraceIdRatioBasedSampler}'s bound: sampled when |lower 64 bits| is below it. */
  static long bound(double ratio) {
    if (ratio <= 0.0) {
      return Long.MIN_VALUE;
    }
    if (ratio >= 1.0) {
      return Long.MAX_VALUE;
    }
    return (long) (ratio * Long.MAX_VALUE);
  }

  /** Whether the request's span is sampled. */
  public boolean sampled(Signals s) {
    String tp = traceparent.isEmpty() ? null : s.get(traceparent);
    if (tp != null && validTraceparent(tp)) {
      if (followParent) {
        return (hexDigit(tp.charAt(54)) & 1) != 0;
      }
      return ratio(tp, 19);
    }
    String single = b3 == null ? null : s.get(b3);
    if (single != null) {
      Boolean d = b3Single(single);
      if (d != null) {
        return d;
      }
    }
    String multi = b3TraceId == null ? null : s.get(b3TraceId);
    if (multi != null
        && (multi.length() == 32 || multi.length() == 16)
        && hex(multi, 0, multi.length())) {
      String flag = b3Sampled == null ? null : s.get(b3Sampled);
      if (followParent && flag != null) {
        return flag.equals("1") || flag.equalsIgnoreCase("true");
      }
      return ratio(multi, multi.length() - 16);
    }
    return ratio >= 1.0 || ThreadLocalRandom.current().nextDouble() < ratio;
  }

  /** A B3 single header's decision, or null when it carries no usable trace context. */
  private @Nullable Boolean b3Single(String v) {
    if (v.length() == 1) { // a sampling decision only: "0", "1", "d"
      return followParent ? v.charAt(0) != '0' : null;
    }
    int dash = v.indexOf('-');
    if ((dash != 32 && dash != 16) || !hex(v, 0, dash)) {
      return null;
    }
    int second = v.indexOf('-', dash + 1);
    if (followParent && second > 0 && second + 1 < v.length()) {
      return v.charAt(second + 1) != '0';
    }
    return ratio(v, dash - 16);
  }

  /** The ratio applied to the 16 hex digits at {@code from}. */
  private boolean ratio(String v, int from) {
    long id = 0;
    for (int i = from; i < from + 16; i++) {
      id = (id << 4) | hexDigit(v.charAt(i));
    }
    return Math.abs(id) < bound;
  }

  /**
   * A W3C traceparent OpenTelemetry accepts: version (not {@code ff}) "-" 32 hex trace id (not all
   * zeros) "-" 16 hex parent id (not all zeros) "-" 2 hex flags; later versions may append.
   */
  static boolean validTraceparent(String tp) {
    if (tp.length() < 55
        || (tp.length() > 55 && tp.charAt(55) != '-')
        || tp.charAt(2) != '-'
        || tp.charAt(35) != '-'
        || tp.charAt(52) != '-'
        || !hex(tp, 0, 2)
        || tp.startsWith("ff")
        || (tp.length() > 55 && tp.startsWith("00"))
        || !hex(tp, 3, 35)
        || !hex(tp, 36, 52)
        || !hex(tp, 53, 55)) {
      return false;
    }
    return !zeros(tp, 3, 35) && !zeros(tp, 36, 52);
  }

  private static boolean hex(String v, int from, int to) {
    for (int i = from; i < to; i++) {
      if (hexDigit(v.charAt(i)) < 0) {
        return false;
      }
    }
    return true;
  }

  private static boolean zeros(String v, int from, int to) {
    for (int i = from; i < to; i++) {
      if (v.charAt(i) != '0') {
        return false;
      }
    }
    return true;
  }

  /** A lower-case hex digit's value, or -1 (OpenTelemetry reads lower case only). */
  private static int hexDigit(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  }
}
