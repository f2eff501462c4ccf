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
    long epoch = Double.doubleToRawLongBits(epochMillis);
    if (more.length == 0
        && last != null
        && last.route == route
        && last.left == left
        && last.epoch == epoch
        && last.in == in
        && last.out == out
        && last.work == work
        && last.atBody == atBody
        && last.clearRouteCache == clearRouteCache
        && last.degraded == degraded
        && last.estimated == estimated
        && java.util.Objects.equals(last.tenant, tenant)) {
      return last.bytes; // the same answer: streams in the same millisecond share it
    }
    byte[] bytes =
        write(
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
    if (more.length == 0) {
      h.lastAnswer =
          new Last(
              route,
              tenant,
              left,
              epoch,
              in,
              out,
              work,
              atBody,
              clearRouteCache,
              degraded,
              estimated,
              bytes);
    }
    return bytes;
  }

  /**
   * The last common admit written for one config (kept by its {@link AdmitHeaders}, so one entry
   * per config) with every value it was written for: an answer for the same values is these bytes.
   * Answers are never written to once encoded, so two streams may send the same array. Immutable,
   * so a racy read sees a whole entry or none.
   */
  @SuppressWarnings("ArrayRecordComponent") // compared by identity (route), bytes only handed out
  record Last(
      byte[] route,
      @Nullable String tenant,
      long left,
      long epoch,
      long in,
      long out,
      long work,
      boolean atBody,
      boolean clearRouteCache,
      boolean degraded,
      boolean estimated,
      byte[] bytes) {}

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
      h.writeMutation(o, degraded, estimated, in, out, work, left);
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
    if (estimated) {
      number(o, ESTIMATE[0], in);
      number(o, ESTIMATE[1], out);
      number(o, ESTIMATE[2], work);
    }
    number(o, REMAINING, left);
    number(o, EPOCH, epochMillis);
    if (more.length > 0) {
      o.raw(more);
    }
    return o.done();
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
