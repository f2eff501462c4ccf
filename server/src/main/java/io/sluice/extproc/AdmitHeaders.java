package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The header mutation of the common admit (no plan headers, no new body) for one {@code responses}
 * config: {@code x-sluice-decision}, {@code x-sluice-estimate}, the deadline header and Envoy's
 * upstream timeout, in that order, as configured. The names are encoded once per config; the values
 * are written as ASCII straight into arrays (the time left shared by both time headers), with no
 * map and no String per answer.
 */
final class AdmitHeaders {
  private static final byte[] ADMIT = ascii("admit");
  private static final byte[] DEGRADE = ascii("degrade");
  private static final byte[] INPUT = ascii("input=");
  private static final byte[] OUTPUT = ascii(";output=");
  private static final byte[] WORK = ascii(";work=");

  /** The last config's: one config is live at a time, so a reload builds it once more. */
  private static volatile @Nullable AdmitHeaders last;

  private final SluiceConfig.Responses cfg;
  private final byte[][] withEstimate; // as configured
  private final byte[][] withoutEstimate; // the same without x-sluice-estimate (no estimate made)

  private AdmitHeaders(SluiceConfig.Responses cfg) {
    this.cfg = cfg;
    this.withEstimate = keys(cfg, cfg.estimateHeader());
    this.withoutEstimate = keys(cfg, false);
  }

  private static byte[][] keys(SluiceConfig.Responses cfg, boolean estimate) {
    byte[][] keys = new byte[4][];
    int n = 0;
    if (cfg.decisionHeader()) {
      keys[n++] = HeaderKeys.utf8("x-sluice-decision");
    }
    if (estimate) {
      keys[n++] = HeaderKeys.utf8("x-sluice-estimate");
    }
    if (!cfg.deadlineHeader().isEmpty()) {
      keys[n++] = HeaderKeys.utf8(cfg.deadlineHeader());
    }
    if (cfg.upstreamTimeout()) {
      keys[n++] = HeaderKeys.utf8("x-envoy-upstream-rq-timeout-ms");
    }
    return java.util.Arrays.copyOf(keys, n);
  }

  static AdmitHeaders of(SluiceConfig.Responses cfg) {
    AdmitHeaders h = last;
    if (h == null || h.cfg != cfg) {
      h = new AdmitHeaders(cfg);
      last = h;
    }
    return h;
  }

  /** The names when {@code estimated} (an estimate was made); shared, never written to. */
  byte[][] keys(boolean estimated) {
    return estimated ? withEstimate : withoutEstimate;
  }

  /**
   * The values beside {@link #keys(boolean)}: "degrade" or "admit", {@code
   * input=<in>;output=<out>;work=<work>} when {@code estimated}, then {@code left} ms in each time
   * header.
   */
  byte[][] values(boolean degrade, boolean estimated, long in, long out, long work, long left) {
    byte[][] keys = keys(estimated);
    byte[][] values = new byte[keys.length][];
    int i = 0;
    if (cfg.decisionHeader()) {
      values[i++] = degrade ? DEGRADE : ADMIT;
    }
    if (estimated && cfg.estimateHeader()) {
      values[i++] = estimate(in, out, work);
    }
    if (i < values.length) {
      byte[] digits = digits(left);
      while (i < values.length) {
        values[i++] = digits;
      }
    }
    return values;
  }

  private static byte[] estimate(long in, long out, long work) {
    int n = INPUT.length + OUTPUT.length + WORK.length + size(in) + size(out) + size(work);
    byte[] b = new byte[n];
    int at = put(b, 0, INPUT);
    at = write(b, at, in);
    at = put(b, at, OUTPUT);
    at = write(b, at, out);
    at = put(b, at, WORK);
    write(b, at, work);
    return b;
  }

  /** {@code Long.toString(v)}'s bytes. */
  static byte[] digits(long v) {
    byte[] b = new byte[size(v)];
    write(b, 0, v);
    return b;
  }

  /** The length of {@code Long.toString(v)}. */
  private static int size(long v) {
    if (v == Long.MIN_VALUE) {
      return 20;
    }
    int n = v < 0 ? 2 : 1;
    for (long x = Math.abs(v); x >= 10; x /= 10) {
      n++;
    }
    return n;
  }

  /** Writes {@code Long.toString(v)} at {@code at}; returns the index after it. */
  private static int write(byte[] b, int at, long v) {
    if (v == Long.MIN_VALUE) {
      return put(b, at, ascii(Long.toString(v)));
    }
    int end = at + size(v);
    int stop = at;
    if (v < 0) {
      b[at] = '-';
      stop = at + 1;
      v = -v;
    }
    for (int i = end - 1; i >= stop; i--) {
      b[i] = (byte) ('0' + (v % 10));
      v /= 10;
    }
    return end;
  }

  private static int put(byte[] b, int at, byte[] part) {
    System.arraycopy(part, 0, b, at, part.length);
    return at + part.length;
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
