package io.sluice.extproc;

import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.sluice.config.SluiceConfig;
import io.sluice.wire.ProtoWriter;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The header mutation of the common admit (no plan headers, no new body) for one {@code responses}
 * config: {@code x-sluice-decision}, {@code x-sluice-estimate}, the deadline header and Envoy's
 * upstream timeout, in that order, as configured. The names are encoded once per config, each as
 * the start of its HeaderValue; {@link #writeMutation} writes the values as ASCII straight into the
 * answer, with no map, no String and no array per answer ({@link #values}: the same values as
 * arrays, for the general encoder and its tests).
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
  private final byte[][] withEstimateParts; // each name as the start of its HeaderValue
  private final byte[][] withoutEstimateParts;

  /**
   * The last common admit written with these headers ({@link AdmitAnswer}): one per config. Plain,
   * not volatile: an entry is immutable (final fields), so a racy read sees a whole one or an older
   * one, and either is a correct answer for the values it holds.
   */
  AdmitAnswer.@Nullable Last lastAnswer;

  private AdmitHeaders(SluiceConfig.Responses cfg) {
    this.cfg = cfg;
    this.withEstimate = keys(cfg, cfg.estimateHeader());
    this.withoutEstimate = keys(cfg, false);
    this.withEstimateParts = parts(withEstimate);
    this.withoutEstimateParts = parts(withoutEstimate);
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
    ProtoWriter o = new ProtoWriter(estimateSize(in, out, work));
    writeEstimate(o, in, out, work);
    return o.done();
  }

  private static int estimateSize(long in, long out, long work) {
    return INPUT.length
        + OUTPUT.length
        + WORK.length
        + ProtoWriter.decimalSize(in)
        + ProtoWriter.decimalSize(out)
        + ProtoWriter.decimalSize(work);
  }

  private static void writeEstimate(ProtoWriter o, long in, long out, long work) {
    o.raw(INPUT);
    o.decimal(in);
    o.raw(OUTPUT);
    o.decimal(out);
    o.raw(WORK);
    o.decimal(work);
  }

  /** {@code Long.toString(v)}'s bytes. */
  static byte[] digits(long v) {
    ProtoWriter o = new ProtoWriter(ProtoWriter.decimalSize(v));
    o.decimal(v);
    return o.done();
  }

  // --- the header mutation written in place: what AnswerEncoder writes for keys(e) and values(..)

  /**
   * The bytes of the set_headers entries (a HeaderMutation's content) for {@link #values}' headers:
   * what {@link #writeMutation} writes.
   */
  int mutationSize(boolean degrade, boolean estimated, long in, long out, long work, long left) {
    byte[][] parts = parts(estimated);
    int size = 0;
    int i = 0;
    if (cfg.decisionHeader()) {
      size += setHeaderSize(parts[i++], (degrade ? DEGRADE : ADMIT).length);
    }
    if (estimated && cfg.estimateHeader()) {
      size += setHeaderSize(parts[i++], estimateSize(in, out, work));
    }
    int digits = ProtoWriter.decimalSize(left);
    while (i < parts.length) {
      size += setHeaderSize(parts[i++], digits);
    }
    return size;
  }

  /**
   * {@link #values}' headers as set_headers entries, each value written in place (no array per
   * value): byte for byte what {@code AnswerEncoder} writes for {@link #keys} and {@link #values}.
   * {@code at} gets the places of the numbers ({@link #patchMutation}'s points, -1 for none).
   */
  void writeMutation(
      ProtoWriter o,
      boolean degrade,
      boolean estimated,
      long in,
      long out,
      long work,
      long left,
      int[] at) {
    byte[][] parts = parts(estimated);
    int i = 0;
    if (cfg.decisionHeader()) {
      byte[] v = degrade ? DEGRADE : ADMIT;
      setHeader(o, parts[i++], v.length);
      o.raw(v);
      o.raw(APPEND);
    }
    if (estimated && cfg.estimateHeader()) {
      setHeader(o, parts[i++], estimateSize(in, out, work));
      at[0] = o.position();
      writeEstimate(o, in, out, work);
      o.raw(APPEND);
    }
    int digits = ProtoWriter.decimalSize(left);
    for (int k = 1; i < parts.length; k++) { // the deadline header, the upstream timeout
      setHeader(o, parts[i++], digits);
      at[k] = o.position();
      o.decimal(left, digits);
      o.raw(APPEND);
    }
  }

  /** The points {@link #writeMutation} sets: the estimate's value, the two time values. */
  static final int PATCH_POINTS = 3;

  /** An array of {@code n} points, none set (-1). */
  static int[] noPatchPoints(int n) {
    int[] at = new int[n];
    java.util.Arrays.fill(at, -1);
    return at;
  }

  /**
   * Writes these numbers over a mutation that {@link #writeMutation} wrote, at its points {@code
   * at}, for numbers of as many digits as it was written with: the same bytes as writing it anew.
   */
  static void patchMutation(byte[] b, int[] at, long in, long out, long work, long left) {
    int e = at[0];
    if (e >= 0) { // input=<in>;output=<out>;work=<work>
      e = decimal(b, e + INPUT.length, in) + OUTPUT.length;
      e = decimal(b, e, out) + WORK.length;
      decimal(b, e, work);
    }
    for (int k = 1; k < PATCH_POINTS && at[k] >= 0; k++) {
      decimal(b, at[k], left);
    }
  }

  private static int decimal(byte[] b, int at, long v) {
    int size = ProtoWriter.decimalSize(v);
    ProtoWriter.decimal(b, at, v, size);
    return at + size;
  }

  private byte[][] parts(boolean estimated) {
    return estimated ? withEstimateParts : withoutEstimateParts;
  }

  /**
   * A header's name as the start of its HeaderValue: the key field, then the raw_value tag (its
   * length and the value follow). Values here are never empty, so raw_value is always written.
   */
  private static byte[][] parts(byte[][] keys) {
    byte[][] parts = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      ProtoWriter o =
          new ProtoWriter(
              ProtoWriter.lenField(HeaderValue.KEY_FIELD_NUMBER, keys[i].length)
                  + ProtoWriter.varintSize(HeaderValue.RAW_VALUE_FIELD_NUMBER << 3));
      o.bytes(HeaderValue.KEY_FIELD_NUMBER, keys[i]);
      o.tag(HeaderValue.RAW_VALUE_FIELD_NUMBER, ProtoWriter.LEN);
      parts[i] = o.done();
    }
    return parts;
  }

  /** The HeaderValue's bytes: its key part, the value's length, the value. */
  private static int headerValue(byte[] part, int valueLength) {
    return part.length + ProtoWriter.varintSize(valueLength) + valueLength;
  }

  private static int headerOption(byte[] part, int valueLength) {
    return ProtoWriter.lenField(
            HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(part, valueLength))
        + APPEND.length;
  }

  private static int setHeaderSize(byte[] part, int valueLength) {
    return ProtoWriter.lenField(
        HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(part, valueLength));
  }

  /** One set_headers entry up to its value (the caller writes the value, then {@link #APPEND}). */
  private static void setHeader(ProtoWriter o, byte[] part, int valueLength) {
    o.len(HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(part, valueLength));
    o.len(HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(part, valueLength));
    o.raw(part);
    o.varint(valueLength);
  }

  /** The append_action field that ends every entry (OVERWRITE_IF_EXISTS_OR_ADD). */
  private static final byte[] APPEND = append();

  private static byte[] append() {
    int action = HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD.getNumber();
    ProtoWriter o =
        new ProtoWriter(
            ProtoWriter.varintField(HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, action));
    o.tag(HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, ProtoWriter.VARINT);
    o.varint(action);
    return o.done();
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
