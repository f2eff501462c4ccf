package io.sluice.extproc;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.GrpcStatus;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.sluice.wire.ProtoWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

/**
 * Writes the answers every admitted or refused request gets — the admit CONTINUE (with its header
 * mutation) or the refusal's ImmediateResponse, and the {@code sluice} dynamic metadata — straight
 * to protobuf wire format, without building {@code Struct}/{@code MapEntry} objects (that was a
 * third of Sluice's own CPU per stream). Field numbers come from the generated classes; {@code
 * AnswerEncoderTest} checks every output against the same message built with protobuf-java. Map
 * entries of the bounded fields (tier, class, pool, route, decision, reason) are encoded once and
 * reused.
 */
final class AnswerEncoder {
  static final String NAMESPACE = "sluice";
  static final int ENTRY_KEY = 1; // map<string, Value> entry: key = 1, value = 2
  static final int ENTRY_VALUE = 2;
  private static final int APPEND_ACTION =
      HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD.getNumber();

  private static final byte[] EMPTY = new byte[0];

  private AnswerEncoder() {}

  /**
   * The fields of the {@code sluice} dynamic metadata namespace. {@code would} (null: none) and
   * {@code wouldReason}: shadow mode's would-be decision, written as {@code mode: shadow}, {@code
   * would} and {@code would_reason} after {@code reason}. {@code extra}: further entries, already
   * encoded ({@link #stringEntry}, {@link #numberEntry}), written last.
   */
  @SuppressWarnings("ArrayRecordComponent") // encoded once, written once, never compared
  record DecisionFields(
      boolean resolved,
      String tenant,
      String tier,
      String requestClass,
      String pool,
      String route,
      String decision,
      String reason,
      boolean estimated,
      long estInputTokens,
      long estOutputTokens,
      long workUnits,
      @Nullable String would,
      @Nullable String wouldReason,
      byte[] extra) {}

  /** An encoded string entry of the metadata Struct, for {@link DecisionFields#extra}. */
  static byte[] stringEntry(String key, String value) {
    return encodeStringEntry(key, value);
  }

  private static final java.util.concurrent.ConcurrentMap<String, byte[]> EXTRA_PREFIXES =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** An encoded number entry of the metadata Struct, for {@link DecisionFields#extra}. */
  static byte[] numberEntry(String key, double value) {
    byte[] prefix = cachedNumberPrefix(key);
    byte[] out = java.util.Arrays.copyOf(prefix, prefix.length + Long.BYTES);
    ProtoWriter.fixed64(out, prefix.length, Double.doubleToRawLongBits(value));
    return out;
  }

  /** Two encoded number entries in one array: {@link #numberEntry} twice, one allocation. */
  static byte[] numberEntries(String k1, double v1, String k2, double v2) {
    byte[] p1 = cachedNumberPrefix(k1);
    byte[] p2 = cachedNumberPrefix(k2);
    byte[] out = new byte[p1.length + p2.length + 2 * Long.BYTES];
    System.arraycopy(p1, 0, out, 0, p1.length);
    ProtoWriter.fixed64(out, p1.length, Double.doubleToRawLongBits(v1));
    int at = p1.length + Long.BYTES;
    System.arraycopy(p2, 0, out, at, p2.length);
    ProtoWriter.fixed64(out, at + p2.length, Double.doubleToRawLongBits(v2));
    return out;
  }

  private static byte[] cachedNumberPrefix(String key) {
    byte[] prefix = EXTRA_PREFIXES.get(key);
    if (prefix == null) { // keys are constants of the callers: a handful
      prefix = EXTRA_PREFIXES.computeIfAbsent(key, AnswerEncoder::numberPrefix);
    }
    return prefix;
  }

  /** A CONTINUE for the deciding request phase, with header mutation and dynamic metadata. */
  static byte[] admit(
      Entries entries, boolean atBody, Map<String, String> headers, DecisionFields f) {
    return admit(
        entries, atBody, HeaderKeys.keys(headers), HeaderKeys.values(headers), null, false, f);
  }

  /**
   * As above, the headers' names and values encoded ({@code keys[i]: values[i]}), and {@code body}
   * (not null: the body the upstream gets instead, a {@code body_mutation}; only in a request body
   * response, BUFFERED) and {@code clear_route_cache}.
   */
  static byte[] admit(
      Entries entries,
      boolean atBody,
      byte[][] keys,
      byte[][] values,
      byte @org.jspecify.annotations.Nullable [] body,
      boolean clearRouteCache,
      DecisionFields f) {
    int n = keys.length;
    int mutation = 0;
    for (int i = 0; i < n; i++) {
      mutation +=
          lenField(HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(keys[i], values[i]));
    }
    int bodyMutation = body == null ? 0 : lenField(BodyMutation.BODY_FIELD_NUMBER, body.length);
    int common =
        (n == 0 ? 0 : lenField(CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation))
            + (body == null ? 0 : lenField(CommonResponse.BODY_MUTATION_FIELD_NUMBER, bodyMutation))
            + (clearRouteCache
                ? CodedOutputStream.computeBoolSize(
                    CommonResponse.CLEAR_ROUTE_CACHE_FIELD_NUMBER, true)
                : 0);
    int phaseBody = lenField(HeadersResponse.RESPONSE_FIELD_NUMBER, common);
    int phaseField =
        atBody
            ? ProcessingResponse.REQUEST_BODY_FIELD_NUMBER
            : ProcessingResponse.REQUEST_HEADERS_FIELD_NUMBER;
    Inner inner = new Inner(entries, f);
    ProtoWriter o = new ProtoWriter(lenField(phaseField, phaseBody) + metadataSize(inner.size));
    o.len(phaseField, phaseBody);
    o.len(BodyResponse.RESPONSE_FIELD_NUMBER, common); // == HeadersResponse's
    if (n > 0) {
      o.len(CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation);
      writeHeaders(o, keys, values);
    }
    if (body != null) {
      o.len(CommonResponse.BODY_MUTATION_FIELD_NUMBER, bodyMutation);
      o.bytes(BodyMutation.BODY_FIELD_NUMBER, body);
    }
    if (clearRouteCache) {
      o.tag(CommonResponse.CLEAR_ROUTE_CACHE_FIELD_NUMBER, WireFormat.WIRETYPE_VARINT);
      o.varint(1L);
    }
    writeMetadata(o, inner);
    return o.done();
  }

  /**
   * An {@code ImmediateResponse} (status, header mutation, body, details) with the dynamic
   * metadata: the answer of every refused request, so the cheap path under overload stays cheap.
   * Fields are written in field-number order, as protobuf-java writes them; empty body and details
   * are omitted (proto3 defaults).
   */
  static byte[] reject(
      Entries entries,
      int status,
      byte[] details,
      byte[] body,
      byte[][] keys,
      byte[][] values,
      DecisionFields f) {
    return reject(entries, status, -1, details, body, keys, values, f);
  }

  /**
   * As above, with {@code grpc_status} (a gRPC status code, or -1 for none): the code a gRPC client
   * sees. grpc-java's xDS ext_proc filter reads only this field of the status (an unset one is code
   * 0, OK), Envoy uses it for gRPC requests instead of mapping the HTTP status (docs/envoy.md).
   */
  static byte[] reject(
      Entries entries,
      int status,
      int grpcStatus,
      byte[] details,
      byte[] body,
      byte[][] keys,
      byte[][] values,
      DecisionFields f) {
    int n = keys.length;
    int mutation = 0;
    for (int i = 0; i < n; i++) {
      mutation +=
          lenField(HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(keys[i], values[i]));
    }
    int statusBody =
        status == 0 ? 0 : ProtoWriter.varintField(HttpStatus.CODE_FIELD_NUMBER, status);
    // GrpcStatus{status}: an empty message for OK (proto3 omits 0), still present, as protobuf-java
    int grpcBody =
        grpcStatus <= 0 ? 0 : ProtoWriter.varintField(GrpcStatus.STATUS_FIELD_NUMBER, grpcStatus);
    int immediate =
        lenField(ImmediateResponse.STATUS_FIELD_NUMBER, statusBody)
            + (n == 0 ? 0 : lenField(ImmediateResponse.HEADERS_FIELD_NUMBER, mutation))
            + (body.length == 0 ? 0 : lenField(ImmediateResponse.BODY_FIELD_NUMBER, body.length))
            + (grpcStatus < 0 ? 0 : lenField(ImmediateResponse.GRPC_STATUS_FIELD_NUMBER, grpcBody))
            + (details.length == 0
                ? 0
                : lenField(ImmediateResponse.DETAILS_FIELD_NUMBER, details.length));
    Inner inner = new Inner(entries, f);
    ProtoWriter o =
        new ProtoWriter(
            lenField(ProcessingResponse.IMMEDIATE_RESPONSE_FIELD_NUMBER, immediate)
                + metadataSize(inner.size));
    o.len(ProcessingResponse.IMMEDIATE_RESPONSE_FIELD_NUMBER, immediate);
    o.len(ImmediateResponse.STATUS_FIELD_NUMBER, statusBody);
    if (status != 0) {
      o.tag(HttpStatus.CODE_FIELD_NUMBER, WireFormat.WIRETYPE_VARINT);
      o.varint((long) status); // an enum: negative values take ten bytes, as in protobuf-java
    }
    if (n > 0) {
      o.len(ImmediateResponse.HEADERS_FIELD_NUMBER, mutation);
      writeHeaders(o, keys, values);
    }
    if (body.length > 0) {
      o.bytes(ImmediateResponse.BODY_FIELD_NUMBER, body);
    }
    if (grpcStatus >= 0) {
      o.len(ImmediateResponse.GRPC_STATUS_FIELD_NUMBER, grpcBody);
      if (grpcStatus > 0) {
        o.tag(GrpcStatus.STATUS_FIELD_NUMBER, WireFormat.WIRETYPE_VARINT);
        o.varint((long) grpcStatus);
      }
    }
    if (details.length > 0) {
      o.bytes(ImmediateResponse.DETAILS_FIELD_NUMBER, details);
    }
    writeMetadata(o, inner);
    return o.done();
  }

  /** The set_headers entries of a HeaderMutation (its tag and length written by the caller). */
  private static void writeHeaders(ProtoWriter o, byte[][] keys, byte[][] values) {
    for (int i = 0; i < keys.length; i++) {
      o.len(HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(keys[i], values[i]));
      o.len(HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(keys[i], values[i]));
      o.bytes(HeaderValue.KEY_FIELD_NUMBER, keys[i]);
      if (values[i].length > 0) { // proto3: an empty bytes field is not written
        o.bytes(HeaderValue.RAW_VALUE_FIELD_NUMBER, values[i]);
      }
      o.tag(HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, WireFormat.WIRETYPE_VARINT);
      o.varint(APPEND_ACTION);
    }
  }

  /**
   * {@code dynamic_metadata} as a complete field of {@code ProcessingResponse}: appended to any
   * encoded ProcessingResponse without it, the result is that response with the metadata set.
   */
  static byte[] metadataField(Entries entries, DecisionFields f) {
    Inner inner = new Inner(entries, f);
    ProtoWriter o = new ProtoWriter(metadataSize(inner.size));
    writeMetadata(o, inner);
    return o.done();
  }

  // --- sizes: {dynamic_metadata: Struct{fields: {"sluice": Value{struct_value: Struct{...}}}}}

  private static final byte[] NAMESPACE_UTF8 = utf8(NAMESPACE);

  static int metadataSize(int inner) {
    return lenField(ProcessingResponse.DYNAMIC_METADATA_FIELD_NUMBER, outerStruct(inner));
  }

  private static int sluiceValue(int inner) {
    return lenField(Value.STRUCT_VALUE_FIELD_NUMBER, inner);
  }

  private static int outerEntry(int inner) {
    return lenField(ENTRY_KEY, NAMESPACE_UTF8.length) + lenField(ENTRY_VALUE, sluiceValue(inner));
  }

  private static int outerStruct(int inner) {
    return lenField(Struct.FIELDS_FIELD_NUMBER, outerEntry(inner));
  }

  /**
   * The inner Struct of one answer: the bounded entries already encoded (looked up once), the
   * tenant entry sized, the three numbers as constant prefixes plus 8 bytes each.
   */
  private static final class Inner {
    final byte[][] bounded = new byte[6][];
    final int count;
    final byte @Nullable [] tenant;
    final boolean numbers;
    final long v0;
    final long v1;
    final long v2;
    final byte[] extra;
    final int size;

    Inner(Entries entries, DecisionFields f) {
      int n = 0;
      int sz = 0;
      if (f.resolved()) {
        bounded[n++] = entries.route(f.tier(), f.requestClass(), f.pool(), f.route());
        tenant = utf8(f.tenant());
        sz += stringEntrySize(TENANT_KEY, tenant);
      } else {
        tenant = null;
      }
      bounded[n++] =
          "admit".equals(f.decision()) ? DECISION_ADMIT : entries.decision.get(f.decision());
      bounded[n++] =
          "admitted".equals(f.reason()) ? REASON_ADMITTED : entries.reason.get(f.reason());
      if (f.would() != null) { // shadow mode only: never on an enforced answer
        bounded[n++] = MODE_SHADOW;
        bounded[n++] = entries.would.get(f.would());
        bounded[n++] = entries.wouldReason.get(f.wouldReason());
      }
      count = n;
      for (int i = 0; i < n; i++) {
        sz += bounded[i].length;
      }
      numbers = f.estimated();
      v0 = f.estInputTokens();
      v1 = f.estOutputTokens();
      v2 = f.workUnits();
      if (numbers) {
        for (byte[] prefix : NUMBER_PREFIXES) {
          sz += prefix.length + Long.BYTES;
        }
      }
      extra = f.extra();
      size = sz + extra.length;
    }

    void writeTo(ProtoWriter o) {
      if (tenant != null) {
        writeStringEntry(o, TENANT_KEY, tenant);
      }
      for (int i = 0; i < count; i++) {
        o.raw(bounded[i]);
      }
      if (numbers) {
        o.raw(NUMBER_PREFIXES[0]);
        o.fixed64(Double.doubleToRawLongBits(v0));
        o.raw(NUMBER_PREFIXES[1]);
        o.fixed64(Double.doubleToRawLongBits(v1));
        o.raw(NUMBER_PREFIXES[2]);
        o.fixed64(Double.doubleToRawLongBits(v2));
      }
      if (extra.length > 0) {
        o.raw(extra);
      }
    }
  }

  private static void writeMetadata(ProtoWriter o, Inner inner) {
    metadataHead(o, inner.size);
    inner.writeTo(o);
  }

  /** {@code dynamic_metadata} up to the inner Struct's {@code inner} bytes, which follow. */
  static void metadataHead(ProtoWriter o, int inner) {
    o.len(ProcessingResponse.DYNAMIC_METADATA_FIELD_NUMBER, outerStruct(inner));
    o.len(Struct.FIELDS_FIELD_NUMBER, outerEntry(inner));
    o.bytes(ENTRY_KEY, NAMESPACE_UTF8);
    o.len(ENTRY_VALUE, sluiceValue(inner));
    o.len(Value.STRUCT_VALUE_FIELD_NUMBER, inner);
  }

  // --- one Struct entry: fields { key: k, value: Value{string_value | number_value} }

  private static final byte[] TENANT_KEY = utf8("tenant");

  private static int stringEntry(byte[] k, byte[] v) {
    return lenField(ENTRY_KEY, k.length)
        + lenField(ENTRY_VALUE, lenField(Value.STRING_VALUE_FIELD_NUMBER, v.length));
  }

  private static int stringEntrySize(byte[] k, byte[] v) {
    return lenField(Struct.FIELDS_FIELD_NUMBER, stringEntry(k, v));
  }

  private static void writeStringEntry(ProtoWriter o, byte[] k, byte[] v) {
    o.len(Struct.FIELDS_FIELD_NUMBER, stringEntry(k, v));
    o.bytes(ENTRY_KEY, k);
    o.len(ENTRY_VALUE, lenField(Value.STRING_VALUE_FIELD_NUMBER, v.length));
    o.bytes(Value.STRING_VALUE_FIELD_NUMBER, v);
  }

  private static final int NUMBER_VALUE =
      CodedOutputStream.computeDoubleSize(Value.NUMBER_VALUE_FIELD_NUMBER, 0);

  /** Everything of a number entry but the double's 8 bytes, for the three number fields. */
  static final byte[][] NUMBER_PREFIXES = {
    numberPrefix("est_input_tokens"), numberPrefix("est_output_tokens"), numberPrefix("work_units")
  };

  static byte[] numberPrefix(String key) {
    byte[] k = utf8(key);
    int entry = lenField(ENTRY_KEY, k.length) + lenField(ENTRY_VALUE, NUMBER_VALUE);
    ProtoWriter o = new ProtoWriter(lenField(Struct.FIELDS_FIELD_NUMBER, entry) - Long.BYTES);
    o.len(Struct.FIELDS_FIELD_NUMBER, entry);
    o.bytes(ENTRY_KEY, k);
    o.len(ENTRY_VALUE, NUMBER_VALUE);
    o.tag(Value.NUMBER_VALUE_FIELD_NUMBER, WireFormat.WIRETYPE_FIXED64);
    return o.done();
  }

  private static byte[] encodeStringEntry(String k, String v) {
    byte[] key = utf8(k);
    byte[] value = utf8(v);
    ProtoWriter o = new ProtoWriter(stringEntrySize(key, value));
    writeStringEntry(o, key, value);
    return o.done();
  }

  /** Encoded entries of one bounded field, by value (a config-sized set; capped all the same). */
  private static final class BoundedEntries {
    private final String key;
    private final ConcurrentMap<String, byte[]> byValue = new ConcurrentHashMap<>();

    BoundedEntries(String key) {
      this.key = key;
    }

    byte[] get(@Nullable String value) {
      String v = value == null ? "" : value;
      byte[] e = byValue.get(v);
      if (e != null) {
        return e;
      }
      if (byValue.size() >= 10_000) {
        return encodeStringEntry(key, v);
      }
      return byValue.computeIfAbsent(v, x -> encodeStringEntry(key, x));
    }
  }

  /** The tier, class, pool and route entries of one resolved route, concatenated. */
  private record RouteKey(String tier, String cls, String pool, String route) {}

  @SuppressWarnings("ArrayRecordComponent") // an identity cache entry: never compared or hashed
  private record LastRoute(String tier, String cls, String pool, String route, byte[] entries) {}

  /**
   * The encoded map entries of the bounded fields, by value: one set per runtime snapshot ({@link
   * ExtProcTables}), so a reload starts a fresh set and the old one goes with its snapshot (never
   * process-global). Config-sized; capped all the same.
   */
  static final class Entries {
    private final BoundedEntries tier = new BoundedEntries("tier");
    private final BoundedEntries cls = new BoundedEntries("class");
    private final BoundedEntries pool = new BoundedEntries("pool");
    private final BoundedEntries route = new BoundedEntries("route");
    private final BoundedEntries decision = new BoundedEntries("decision");
    private final BoundedEntries reason = new BoundedEntries("reason");
    private final BoundedEntries would = new BoundedEntries("would");
    private final BoundedEntries wouldReason = new BoundedEntries("would_reason");
    private final ConcurrentMap<RouteKey, byte[]> routeEntries = new ConcurrentHashMap<>();
    private volatile @Nullable LastRoute lastRoute;

    /** One lookup per answer for the four route entries. */
    byte[] route(String tier, String cls, String pool, String route) {
      // The names come from the policy objects: the same instances request after request, so the
      // last answer is found by reference first (a miss takes the map, which compares by value).
      LastRoute last = lastRoute;
      if (last != null
          && last.tier == tier
          && last.cls == cls
          && last.pool == pool
          && last.route == route) {
        return last.entries;
      }
      RouteKey key = new RouteKey(tier, cls, pool, route);
      byte[] e = routeEntries.get(key);
      if (e == null) {
        if (routeEntries.size() >= 10_000) {
          return concat(key);
        }
        e = routeEntries.computeIfAbsent(key, this::concat);
      }
      lastRoute = new LastRoute(tier, cls, pool, route, e);
      return e;
    }

    private byte[] concat(RouteKey k) {
      byte[][] parts = {
        tier.get(k.tier()), cls.get(k.cls()), pool.get(k.pool()), route.get(k.route())
      };
      int size = 0;
      for (byte[] p : parts) {
        size += p.length;
      }
      byte[] out = new byte[size];
      int pos = 0;
      for (byte[] p : parts) {
        System.arraycopy(p, 0, out, pos, p.length);
        pos += p.length;
      }
      return out;
    }
  }

  // Every admitted request carries these two: no lookup at all.
  static final byte[] DECISION_ADMIT = encodeStringEntry("decision", "admit");
  static final byte[] REASON_ADMITTED = encodeStringEntry("reason", "admitted");
  private static final byte[] MODE_SHADOW = encodeStringEntry("mode", "shadow");

  // --- header mutation entries

  private static int headerValue(byte[] key, byte[] value) {
    return lenField(HeaderValue.KEY_FIELD_NUMBER, key.length)
        + (value.length == 0 ? 0 : lenField(HeaderValue.RAW_VALUE_FIELD_NUMBER, value.length));
  }

  private static int headerOption(byte[] key, byte[] value) {
    return lenField(HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(key, value))
        + CodedOutputStream.computeEnumSize(
            HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, APPEND_ACTION);
  }

  // --- wire helpers
  private static int lenField(int field, int contentLength) {
    return CodedOutputStream.computeTagSize(field)
        + CodedOutputStream.computeUInt32SizeNoTag(contentLength)
        + contentLength;
  }

  /** UTF-8 as protobuf-java writes a string field (unpaired surrogates become '?'). */
  private static byte[] utf8(String s) {
    return s == null ? EMPTY : s.getBytes(StandardCharsets.UTF_8);
  }
}
