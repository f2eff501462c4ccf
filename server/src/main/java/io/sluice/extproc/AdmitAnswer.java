package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.wire.ProtoWriter;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The answer of the common admit (no plan headers, no new body) written in one pass into one
 * exactly sized array: the header mutation of {@link AdmitHeaders} with its values written in
 * place, then the {@code sluice} metadata from parts encoded once — the route's entries ({@link
 * AnswerEncoder.Entries#route}), decision and reason, the number keys — with only the tenant, the
 * five numbers and the rare extras written per answer. No {@code DecisionFields}, no value arrays,
 * no per-number arrays. Byte for byte what {@link AnswerEncoder#admit} writes for the same answer
 * ({@code AdmitAnswerTest}).
 */
final class AdmitAnswer {
  private AdmitAnswer() {}

  /** decision and reason of a plain admit and of a degraded one, each pair encoded once. */
  private static final byte[] ADMITTED =
      concat(AnswerEncoder.DECISION_ADMIT, AnswerEncoder.REASON_ADMITTED);

  private static final byte[] DEGRADED =
      concat(
          AnswerEncoder.stringEntry("decision", "degrade"),
          AnswerEncoder.stringEntry("reason", "degraded"));

  private static final byte[] REMAINING = AnswerEncoder.numberPrefix("deadline_remaining_ms");
  private static final byte[] EPOCH = AnswerEncoder.numberPrefix("deadline_epoch_ms");
  private static final byte[][] ESTIMATE = AnswerEncoder.NUMBER_PREFIXES;
  private static final int ESTIMATE_SIZE =
      ESTIMATE[0].length + ESTIMATE[1].length + ESTIMATE[2].length + 3 * Long.BYTES;
  private static final int DEADLINE_SIZE = REMAINING.length + EPOCH.length + 2 * Long.BYTES;

  /** The tenant entry's key field: tag, length, "tenant". */
  private static final byte[] TENANT_KEY = tenantKey();

  private static final int CLEAR_ROUTE_CACHE =
      ProtoWriter.varintField(CommonResponse.CLEAR_ROUTE_CACHE_FIELD_NUMBER, 1);

  /**
   * The admit CONTINUE of the deciding request phase ({@code atBody}: the body's) with {@code h}'s
   * headers for these values, {@code clear_route_cache} when asked, and the metadata: {@code
   * tenant} (null: empty), the route's encoded entries {@code route}, decision and reason ({@code
   * degraded}: degrade / degraded), the estimate when {@code estimated}, {@code
   * deadline_remaining_ms} ({@code left}), {@code deadline_epoch_ms} ({@code epochMillis}) and
   * {@code more} (further entries, already encoded; empty: none).
   */
  static byte[] encode(
      AdmitHeaders h,
      boolean atBody,
      boolean clearRouteCache,
      byte[] route,
      @Nullable String tenant,
      boolean degraded,
      boolean estimated,
      long in,
      long out,
      long work,
      long left,
      double epochMillis,
      byte[] more) {
    Last last = h.lastAnswer;
    if (more.length == 0
        && last != null
        && last.shape.matches(route, tenant, atBody, clearRouteCache, degraded, estimated)) {
      long epoch = Double.doubleToRawLongBits(epochMillis);
      if (last.left == left
          && last.epoch == epoch
          && last.in == in
          && last.out == out
          && last.work == work) {
        return last.bytes; // the same answer: streams answered in the same millisecond share it
      }
      if (sameDigits(last, estimated, in, out, work, left)) {
        return patched(h, last.shape, last.bytes, in, out, work, left, epochMillis);
      }
    }
    return write(
        h,
        atBody,
        clearRouteCache,
        route,
        tenant,
        degraded,
        estimated,
        in,
        out,
        work,
        left,
        epochMillis,
        more);
  }

  /** Whether the header values of these numbers have as many digits as {@code last}'s. */
  private static boolean sameDigits(
      Last last, boolean estimated, long in, long out, long work, long left) {
    if (ProtoWriter.decimalSize(left) != ProtoWriter.decimalSize(last.left)) {
      return false;
    }
    return !estimated
        || (ProtoWriter.decimalSize(in) == ProtoWriter.decimalSize(last.in)
            && ProtoWriter.decimalSize(out) == ProtoWriter.decimalSize(last.out)
            && ProtoWriter.decimalSize(work) == ProtoWriter.decimalSize(last.work));
  }

  /**
   * The answer of {@code shape} whose bytes for other numbers (as many digits) are {@code last}:
   * those bytes with these numbers written over, kept as the last answer.
   */
  private static byte[] patched(
      AdmitHeaders h,
      Shape shape,
      byte[] last,
      long in,
      long out,
      long work,
      long left,
      double epochMillis) {
    byte[] bytes = last.clone();
    AdmitHeaders.patchMutation(bytes, shape.at, in, out, work, left);
    int at = shape.at[NUMBERS];
    if (shape.estimated) {
      at = patchNumber(bytes, at, ESTIMATE[0], in);
      at = patchNumber(bytes, at, ESTIMATE[1], out);
      at = patchNumber(bytes, at, ESTIMATE[2], work);
    }
    at = patchNumber(bytes, at, REMAINING, left);
    patchNumber(bytes, at, EPOCH, epochMillis);
    h.lastAnswer =
        new Last(shape, left, Double.doubleToRawLongBits(epochMillis), in, out, work, bytes);
    return bytes;
  }

  /** {@link Shape#at}'s index of the metadata's first number entry (estimate or deadline). */
  private static final int NUMBERS = AdmitHeaders.PATCH_POINTS;

  /**
   * The values of an answer that fix its layout, and where its variable bytes are ({@code at}:
   * {@link AdmitHeaders#patchMutation}'s points, then {@link #NUMBERS}): an answer of the same
   * shape whose numbers have as many digits is the same bytes with the numbers written over.
   */
  @SuppressWarnings("ArrayRecordComponent") // compared by identity (route), never by value
  private record Shape(
      byte[] route,
      @Nullable String tenant,
      boolean atBody,
      boolean clearRouteCache,
      boolean degraded,
      boolean estimated,
      int[] at) {
    boolean matches(
        byte[] route,
        @Nullable String tenant,
        boolean atBody,
        boolean clearRouteCache,
        boolean degraded,
        boolean estimated) {
      return this.route == route
          && this.atBody == atBody
          && this.clearRouteCache == clearRouteCache
          && this.degraded == degraded
          && this.estimated == estimated
          && java.util.Objects.equals(this.tenant, tenant);
    }
  }

  /**
   * The last common admit written for one config (kept by its {@link AdmitHeaders}: one entry per
   * config) with the numbers it was written for. Answers are never written to once encoded, so two
   * streams may send the same array. Immutable: a racy read sees a whole entry.
   */
  @SuppressWarnings("ArrayRecordComponent") // bytes only handed out, never compared
  record Last(Shape shape, long left, long epoch, long in, long out, long work, byte[] bytes) {}

  /** A number entry's double written over at {@code at} (its prefix there); the next entry's at. */
  private static int patchNumber(byte[] bytes, int at, byte[] prefix, double value) {
    ProtoWriter.fixed64(bytes, at + prefix.length, Double.doubleToRawLongBits(value));
    return at + prefix.length + Long.BYTES;
  }

  private static byte[] write(
      AdmitHeaders h,
      boolean atBody,
      boolean clearRouteCache,
      byte[] route,
      @Nullable String tenant,
      boolean degraded,
      boolean estimated,
      long in,
      long out,
      long work,
      long left,
      double epochMillis,
      byte[] more) {
    boolean headers = h.keys(estimated).length > 0;
    int[] at = AdmitHeaders.noPatchPoints(NUMBERS + 1);
    int mutation = headers ? h.mutationSize(degraded, estimated, in, out, work, left) : 0;
    int common =
        (headers ? ProtoWriter.lenField(CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation) : 0)
            + (clearRouteCache ? CLEAR_ROUTE_CACHE : 0);
    int phaseBody = ProtoWriter.lenField(HeadersResponse.RESPONSE_FIELD_NUMBER, common);
    int phaseField =
        atBody
            ? ProcessingResponse.REQUEST_BODY_FIELD_NUMBER
            : ProcessingResponse.REQUEST_HEADERS_FIELD_NUMBER;
    String t = tenant == null ? "" : tenant;
    int ascii = ProtoWriter.asciiLength(t);
    byte[] utf8 = ascii < 0 ? t.getBytes(StandardCharsets.UTF_8) : null; // as protobuf-java
    int tenantLength = utf8 == null ? ascii : utf8.length;
    int tenantValue = ProtoWriter.lenField(Value.STRING_VALUE_FIELD_NUMBER, tenantLength);
    int tenantEntry =
        TENANT_KEY.length + ProtoWriter.lenField(AnswerEncoder.ENTRY_VALUE, tenantValue);
    byte[] decision = degraded ? DEGRADED : ADMITTED;
    int inner =
        ProtoWriter.lenField(Struct.FIELDS_FIELD_NUMBER, tenantEntry)
            + route.length
            + decision.length
            + (estimated ? ESTIMATE_SIZE : 0)
            + DEADLINE_SIZE
            + more.length;
    ProtoWriter o =
        new ProtoWriter(
            ProtoWriter.lenField(phaseField, phaseBody) + AnswerEncoder.metadataSize(inner));
    o.len(phaseField, phaseBody);
    o.len(HeadersResponse.RESPONSE_FIELD_NUMBER, common); // == BodyResponse's
    if (headers) {
      o.len(CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation);
      h.writeMutation(o, degraded, estimated, in, out, work, left, at);
    }
    if (clearRouteCache) {
      o.tag(CommonResponse.CLEAR_ROUTE_CACHE_FIELD_NUMBER, ProtoWriter.VARINT);
      o.varint(1);
    }
    AnswerEncoder.metadataHead(o, inner);
    o.len(Struct.FIELDS_FIELD_NUMBER, tenantEntry);
    o.raw(TENANT_KEY);
    o.len(AnswerEncoder.ENTRY_VALUE, tenantValue);
    o.len(Value.STRING_VALUE_FIELD_NUMBER, tenantLength);
    if (utf8 == null) {
      o.ascii(t);
    } else {
      o.raw(utf8);
    }
    o.raw(route);
    o.raw(decision);
    at[NUMBERS] = o.position();
    if (estimated) {
      number(o, ESTIMATE[0], in);
      number(o, ESTIMATE[1], out);
      number(o, ESTIMATE[2], work);
    }
    number(o, REMAINING, left);
    number(o, EPOCH, epochMillis);
    if (more.length > 0) {
      o.raw(more);
      return o.done();
    }
    byte[] bytes = o.done();
    h.lastAnswer =
        new Last(
            new Shape(route, tenant, atBody, clearRouteCache, degraded, estimated, at),
            left,
            Double.doubleToRawLongBits(epochMillis),
            in,
            out,
            work,
            bytes);
    return bytes;
  }

  private static void number(ProtoWriter o, byte[] prefix, double value) {
    o.raw(prefix);
    o.fixed64(Double.doubleToRawLongBits(value));
  }

  private static byte[] tenantKey() {
    byte[] k = "tenant".getBytes(StandardCharsets.UTF_8);
    ProtoWriter o = new ProtoWriter(ProtoWriter.lenField(AnswerEncoder.ENTRY_KEY, k.length));
    o.bytes(AnswerEncoder.ENTRY_KEY, k);
    return o.done();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
