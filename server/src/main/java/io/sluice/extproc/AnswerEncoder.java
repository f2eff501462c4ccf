package io.sluice.extproc;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Writes the two answers every admitted or refused request gets — the admit CONTINUE (with its
 * header mutation) and the {@code sluice} dynamic metadata — straight to protobuf wire format,
 * without building {@code Struct}/{@code MapEntry} objects (that was a third of Sluice's own CPU
 * per stream). Field numbers come from the generated classes; {@code AnswerEncoderTest} checks
 * every output against the same message built with protobuf-java. Map entries of the bounded fields
 * (tier, class, pool, route, decision, reason) are encoded once and reused.
 */
final class AnswerEncoder {
  static final String NAMESPACE = "sluice";
  private static final int LEN = WireFormat.WIRETYPE_LENGTH_DELIMITED;
  private static final int ENTRY_KEY = 1; // map<string, Value> entry: key = 1, value = 2
  private static final int ENTRY_VALUE = 2;
  private static final int APPEND_ACTION =
      HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD.getNumber();

  private AnswerEncoder() {}

  /** The fields of the {@code sluice} dynamic metadata namespace. */
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
      long workUnits) {}

  /** A CONTINUE for the deciding request phase, with header mutation and dynamic metadata. */
  static byte[] admit(boolean atBody, Map<String, String> headers, DecisionFields f) {
    int mutation = 0;
    for (Map.Entry<String, String> h : headers.entrySet()) {
      mutation += lenField(HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(h));
    }
    int common =
        headers.isEmpty() ? 0 : lenField(CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation);
    int phaseBody = lenField(HeadersResponse.RESPONSE_FIELD_NUMBER, common);
    int phaseField =
        atBody
            ? ProcessingResponse.REQUEST_BODY_FIELD_NUMBER
            : ProcessingResponse.REQUEST_HEADERS_FIELD_NUMBER;
    Inner inner = new Inner(f);
    byte[] out = new byte[lenField(phaseField, phaseBody) + metadataSize(inner.size)];
    CodedOutputStream o = CodedOutputStream.newInstance(out);
    try {
      header(o, phaseField, phaseBody);
      header(o, BodyResponse.RESPONSE_FIELD_NUMBER, common); // == HeadersResponse's
      if (!headers.isEmpty()) {
        header(o, CommonResponse.HEADER_MUTATION_FIELD_NUMBER, mutation);
        for (Map.Entry<String, String> h : headers.entrySet()) {
          header(o, HeaderMutation.SET_HEADERS_FIELD_NUMBER, headerOption(h));
          header(o, HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(h));
          o.writeString(HeaderValue.KEY_FIELD_NUMBER, h.getKey());
          if (!h.getValue().isEmpty()) { // proto3: an empty bytes field is not written
            o.writeString(HeaderValue.RAW_VALUE_FIELD_NUMBER, h.getValue());
          }
          o.writeEnum(HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, APPEND_ACTION);
        }
      }
      writeMetadata(o, inner);
      o.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /**
   * {@code dynamic_metadata} as a complete field of {@code ProcessingResponse}: appended to any
   * encoded ProcessingResponse without it, the result is that response with the metadata set.
   */
  static byte[] metadataField(DecisionFields f) {
    Inner inner = new Inner(f);
    byte[] out = new byte[metadataSize(inner.size)];
    CodedOutputStream o = CodedOutputStream.newInstance(out);
    try {
      writeMetadata(o, inner);
      o.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  // --- sizes: {dynamic_metadata: Struct{fields: {"sluice": Value{struct_value: Struct{...}}}}}

  private static int metadataSize(int inner) {
    return lenField(ProcessingResponse.DYNAMIC_METADATA_FIELD_NUMBER, outerStruct(inner));
  }

  private static int sluiceValue(int inner) {
    return lenField(Value.STRUCT_VALUE_FIELD_NUMBER, inner);
  }

  private static int outerEntry(int inner) {
    return CodedOutputStream.computeStringSize(ENTRY_KEY, NAMESPACE)
        + lenField(ENTRY_VALUE, sluiceValue(inner));
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
    final String tenant;
    final boolean numbers;
    final long[] values;
    final int size;

    Inner(DecisionFields f) {
      int n = 0;
      int sz = 0;
      if (f.resolved()) {
        bounded[n++] = TIER.get(f.tier());
        bounded[n++] = CLASS.get(f.requestClass());
        bounded[n++] = POOL.get(f.pool());
        bounded[n++] = ROUTE.get(f.route());
        tenant = nonNull(f.tenant());
        sz += stringEntrySize("tenant", tenant);
      } else {
        tenant = null;
      }
      bounded[n++] = DECISION.get(f.decision());
      bounded[n++] = REASON.get(f.reason());
      count = n;
      for (int i = 0; i < n; i++) {
        sz += bounded[i].length;
      }
      numbers = f.estimated();
      values = numbers ? new long[] {f.estInputTokens(), f.estOutputTokens(), f.workUnits()} : null;
      if (numbers) {
        for (byte[] prefix : NUMBER_PREFIXES) {
          sz += prefix.length + Long.BYTES;
        }
      }
      size = sz;
    }

    void writeTo(CodedOutputStream o) throws IOException {
      if (tenant != null) {
        writeStringEntry(o, "tenant", tenant);
      }
      for (int i = 0; i < count; i++) {
        o.writeRawBytes(bounded[i]);
      }
      if (numbers) {
        for (int i = 0; i < NUMBER_PREFIXES.length; i++) {
          o.writeRawBytes(NUMBER_PREFIXES[i]);
          o.writeFixed64NoTag(Double.doubleToRawLongBits(values[i]));
        }
      }
    }
  }

  private static void writeMetadata(CodedOutputStream o, Inner inner) throws IOException {
    header(o, ProcessingResponse.DYNAMIC_METADATA_FIELD_NUMBER, outerStruct(inner.size));
    header(o, Struct.FIELDS_FIELD_NUMBER, outerEntry(inner.size));
    o.writeString(ENTRY_KEY, NAMESPACE);
    header(o, ENTRY_VALUE, sluiceValue(inner.size));
    header(o, Value.STRUCT_VALUE_FIELD_NUMBER, inner.size);
    inner.writeTo(o);
  }

  // --- one Struct entry: fields { key: k, value: Value{string_value | number_value} }

  private static int stringValue(String v) {
    return CodedOutputStream.computeStringSize(Value.STRING_VALUE_FIELD_NUMBER, v);
  }

  private static int stringEntry(String k, String v) {
    return CodedOutputStream.computeStringSize(ENTRY_KEY, k)
        + lenField(ENTRY_VALUE, stringValue(v));
  }

  private static int stringEntrySize(String k, String v) {
    return lenField(Struct.FIELDS_FIELD_NUMBER, stringEntry(k, nonNull(v)));
  }

  private static void writeStringEntry(CodedOutputStream o, String k, String v) throws IOException {
    String value = nonNull(v);
    header(o, Struct.FIELDS_FIELD_NUMBER, stringEntry(k, value));
    o.writeString(ENTRY_KEY, k);
    header(o, ENTRY_VALUE, stringValue(value));
    o.writeString(Value.STRING_VALUE_FIELD_NUMBER, value);
  }

  private static final int NUMBER_VALUE =
      CodedOutputStream.computeDoubleSize(Value.NUMBER_VALUE_FIELD_NUMBER, 0);

  /** Everything of a number entry but the double's 8 bytes, for the three number fields. */
  private static final byte[][] NUMBER_PREFIXES = {
    numberPrefix("est_input_tokens"), numberPrefix("est_output_tokens"), numberPrefix("work_units")
  };

  private static byte[] numberPrefix(String k) {
    int entry =
        CodedOutputStream.computeStringSize(ENTRY_KEY, k) + lenField(ENTRY_VALUE, NUMBER_VALUE);
    byte[] out = new byte[lenField(Struct.FIELDS_FIELD_NUMBER, entry) - Long.BYTES];
    CodedOutputStream o = CodedOutputStream.newInstance(out);
    try {
      header(o, Struct.FIELDS_FIELD_NUMBER, entry);
      o.writeString(ENTRY_KEY, k);
      header(o, ENTRY_VALUE, NUMBER_VALUE);
      o.writeTag(Value.NUMBER_VALUE_FIELD_NUMBER, WireFormat.WIRETYPE_FIXED64);
      o.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private static byte[] encodeStringEntry(String k, String v) {
    byte[] out = new byte[stringEntrySize(k, v)];
    CodedOutputStream o = CodedOutputStream.newInstance(out);
    try {
      writeStringEntry(o, k, v);
      o.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** Encoded entries of one bounded field, by value (a config-sized set; capped all the same). */
  private static final class BoundedEntries {
    private final String key;
    private final ConcurrentMap<String, byte[]> byValue = new ConcurrentHashMap<>();

    BoundedEntries(String key) {
      this.key = key;
    }

    byte[] get(String value) {
      String v = nonNull(value);
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

  private static final BoundedEntries TIER = new BoundedEntries("tier");
  private static final BoundedEntries CLASS = new BoundedEntries("class");
  private static final BoundedEntries POOL = new BoundedEntries("pool");
  private static final BoundedEntries ROUTE = new BoundedEntries("route");
  private static final BoundedEntries DECISION = new BoundedEntries("decision");
  private static final BoundedEntries REASON = new BoundedEntries("reason");

  // --- header mutation entries

  private static int headerValue(Map.Entry<String, String> h) {
    return CodedOutputStream.computeStringSize(HeaderValue.KEY_FIELD_NUMBER, h.getKey())
        + (h.getValue().isEmpty()
            ? 0
            : CodedOutputStream.computeStringSize(
                HeaderValue.RAW_VALUE_FIELD_NUMBER, h.getValue()));
  }

  private static int headerOption(Map.Entry<String, String> h) {
    return lenField(HeaderValueOption.HEADER_FIELD_NUMBER, headerValue(h))
        + CodedOutputStream.computeEnumSize(
            HeaderValueOption.APPEND_ACTION_FIELD_NUMBER, APPEND_ACTION);
  }

  // --- wire helpers

  private static int lenField(int field, int contentLength) {
    return CodedOutputStream.computeTagSize(field)
        + CodedOutputStream.computeUInt32SizeNoTag(contentLength)
        + contentLength;
  }

  private static void header(CodedOutputStream o, int field, int contentLength) throws IOException {
    o.writeTag(field, LEN);
    o.writeUInt32NoTag(contentLength);
  }

  private static String nonNull(String s) {
    return s == null ? "" : s;
  }
}
