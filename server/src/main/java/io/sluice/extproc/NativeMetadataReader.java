package io.sluice.extproc;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.sluice.config.NativeMetadata;
import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.estimate.NativeRequestInfo;
import io.sluice.core.estimate.NativeUsage;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.RunningRequest;
import io.sluice.observability.NativeMetadataMetrics;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * Reads Envoy's native AI metadata from a message's {@code metadata_context} (docs/envoy.md,
 * "Envoy's native AI metadata"): the request info ({@code envoy.data.ai.v3.RequestInfo}) at the
 * request headers, the token usage ({@code envoy.data.ai.v3.TokenUsage}) at the response's end. The
 * typed record (forwarded with {@code forwarding_namespaces.typed}) is preferred; the untyped
 * {@code Struct} projection ({@code forwarding_namespaces.untyped}) is read otherwise.
 *
 * <p>java-control-plane's {@code api} artifact (1.0.49, the Envoy 1.34 API) carries no {@code
 * envoy.data.ai.v3} classes, so both are read structurally: the {@code Any} by its type URL and
 * decoded field by field against the field numbers of the upstream protos (pinned in
 * docs/envoy.md), the {@code Struct} by field name. The values come from Envoy (trusted) but are
 * client-declared or provider-reported: every field is bounded and validated, and one of the wrong
 * type, negative or over its bound is ignored and counted ({@code
 * sluice_native_metadata_invalid_total{kind,field}}), never a failure.
 */
final class NativeMetadataReader {
  static final String REQUEST_INFO_TYPE = "envoy.data.ai.v3.RequestInfo";
  static final String TOKEN_USAGE_TYPE = "envoy.data.ai.v3.TokenUsage";

  private NativeMetadataReader() {}

  /**
   * The request headers: the request info they carry, if any, declared to the session, which then
   * begins ({@link AdmissionSession#begin}).
   */
  static void begin(
      AdmissionRuntime rt,
      Inbound req,
      AdmissionSession s,
      boolean atHeaders,
      long length,
      long now) {
    declare(rt, req, s);
    s.begin(atHeaders, req.headersEndOfStream(), length, now);
  }

  /** A response body chunk: the last one's token usage, if any, then the chunk to the request. */
  static void body(AdmissionRuntime rt, Inbound body, RunningRequest running, boolean last) {
    if (last) {
      usage(rt, body, running);
    }
    running.body(body.bodyArray(), body.bodyOffset(), body.bodyLength(), last);
  }

  /** Response trailers end the answer: their token usage, if any, then the end seen. */
  static void endSeen(AdmissionRuntime rt, Inbound trailers, RunningRequest running) {
    usage(rt, trailers, running);
    running.endSeen();
  }

  /** Declares the request info the request headers carry, if any, to the session. */
  static void declare(AdmissionRuntime rt, Inbound req, AdmissionSession session) {
    ExtProcTables.Held held = rt.tables().held(rt);
    NativeMetadata p = held.nativeMetadata();
    if (!p.requestInfo() || !req.hasContext()) {
      return;
    }
    NativeRequestInfo info =
        requestInfo(
            req.context().getMetadataContext(), p.requestInfoNamespace(), held.nativeMeters());
    if (info != null && info.any()) {
      session.running().declared(info);
    }
  }

  /** Hands the token usage the response's last message carries, if any, to the request. */
  static void usage(AdmissionRuntime rt, Inbound req, RunningRequest running) {
    ExtProcTables.Held held = rt.tables().held(rt);
    NativeMetadata p = held.nativeMetadata();
    if (!p.usage() || !req.hasContext()) {
      return;
    }
    NativeUsage u =
        tokenUsage(req.context().getMetadataContext(), p.usageNamespace(), held.nativeMeters());
    if (u != null) {
      running.nativeUsage(u);
    }
  }

  // --- the request info

  /** The request info under {@code namespace}, or null when neither form is there. */
  static @Nullable NativeRequestInfo requestInfo(
      Metadata md, String namespace, NativeMetadataMetrics m) {
    Any typed = md.getTypedFilterMetadataOrDefault(namespace, null);
    if (typed != null && typeIs(typed, REQUEST_INFO_TYPE)) {
      return typedRequestInfo(typed.getValue(), new Fields(m, NativeCheck.REQUEST_INFO));
    }
    Struct s = md.getFilterMetadataOrDefault(namespace, null);
    if (s == null) {
      if (typed != null) {
        m.invalid(NativeCheck.REQUEST_INFO, "type_url");
      }
      return null;
    }
    Fields f = new Fields(m, NativeCheck.REQUEST_INFO);
    return new NativeRequestInfo(
        f.string(s, "model"),
        f.bool(s, "stream"),
        f.count(s, "max_output_tokens", NativeRequestInfo.MAX_OUTPUT_TOKENS),
        (int) f.count(s, "message_count", NativeRequestInfo.MAX_COUNT),
        (int) f.count(s, "tool_count", NativeRequestInfo.MAX_COUNT));
  }

  private static @Nullable NativeRequestInfo typedRequestInfo(ByteString bytes, Fields f) {
    String model = null;
    Boolean stream = null;
    long maxOutput = -1;
    long messages = -1;
    long tools = -1;
    try {
      CodedInputStream in = bytes.newCodedInput();
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        switch (WireFormat.getTagFieldNumber(tag)) {
          case 2 -> model = f.string(in, tag, "model");
          case 3 -> {
            long v = f.wrapped(in, tag, "stream", 1);
            stream = v < 0 ? null : v != 0;
          }
          case 4 ->
              maxOutput =
                  f.wrapped(in, tag, "max_output_tokens", NativeRequestInfo.MAX_OUTPUT_TOKENS);
          case 5 -> messages = f.wrapped(in, tag, "message_count", NativeRequestInfo.MAX_COUNT);
          case 6 -> tools = f.wrapped(in, tag, "tool_count", NativeRequestInfo.MAX_COUNT);
          default -> in.skipField(tag); // input_llm_protocol, fields added later
        }
      }
    } catch (IOException | RuntimeException e) {
      f.invalid("record");
      return null;
    }
    return new NativeRequestInfo(model, stream, maxOutput, (int) messages, (int) tools);
  }

  // --- the token usage

  /** The token usage under {@code namespace}, or null when neither form is there. */
  static @Nullable NativeUsage tokenUsage(Metadata md, String namespace, NativeMetadataMetrics m) {
    Any typed = md.getTypedFilterMetadataOrDefault(namespace, null);
    if (typed != null && typeIs(typed, TOKEN_USAGE_TYPE)) {
      return typedTokenUsage(typed.getValue(), new Fields(m, NativeCheck.TOKEN_USAGE));
    }
    Struct s = md.getFilterMetadataOrDefault(namespace, null);
    if (s == null) {
      if (typed != null) {
        m.invalid(NativeCheck.TOKEN_USAGE, "type_url");
      }
      return null;
    }
    Fields f = new Fields(m, NativeCheck.TOKEN_USAGE);
    long cached = 0;
    Value details = s.getFieldsOrDefault("input_token_details", null);
    if (details != null && details.hasStructValue()) {
      cached =
          Math.max(0, f.count(details.getStructValue(), "cached_tokens", NativeUsage.MAX_TOKENS));
    } else if (details != null) {
      f.invalid("input_token_details");
    }
    return usage(
        f.count(s, "input_tokens", NativeUsage.MAX_TOKENS),
        f.count(s, "output_tokens", NativeUsage.MAX_TOKENS),
        cached,
        status(f, f.string(s, "extraction_status")));
  }

  private static @Nullable NativeUsage typedTokenUsage(ByteString bytes, Fields f) {
    long input = -1;
    long output = -1;
    long cached = 0;
    int status = 0;
    try {
      CodedInputStream in = bytes.newCodedInput();
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        switch (WireFormat.getTagFieldNumber(tag)) {
          case 3 -> input = f.wrapped(in, tag, "input_tokens", NativeUsage.MAX_TOKENS);
          case 4 -> output = f.wrapped(in, tag, "output_tokens", NativeUsage.MAX_TOKENS);
          case 6 -> cached = Math.max(0, f.cached(in, tag));
          case 9 -> status = f.enumValue(in, tag, "extraction_status");
          default -> in.skipField(tag); // api_protocol, model, totals, output details
        }
      }
    } catch (IOException | RuntimeException e) {
      f.invalid("record");
      return null;
    }
    NativeUsage.Status s =
        switch (status) {
          case 1 -> NativeUsage.Status.COMPLETE;
          case 3 -> NativeUsage.Status.FAILED;
          default -> NativeUsage.Status.PARTIAL; // PARTIAL, or unspecified / unknown: not final
        };
    return usage(input, output, cached, s);
  }

  private static NativeUsage.Status status(Fields f, @Nullable String s) {
    if (s == null || s.equals("PARTIAL")) {
      return NativeUsage.Status.PARTIAL;
    }
    if (s.equals("COMPLETE")) {
      return NativeUsage.Status.COMPLETE;
    }
    if (!s.equals("FAILED")) {
      f.invalid("extraction_status");
    }
    return NativeUsage.Status.FAILED;
  }

  private static NativeUsage usage(long input, long output, long cached, NativeUsage.Status s) {
    return new NativeUsage(input, output, input < 0 ? 0 : Math.min(cached, input), s);
  }

  private static boolean typeIs(Any a, String type) {
    String url = a.getTypeUrl();
    return url.endsWith(type)
        && (url.length() == type.length() || url.charAt(url.length() - type.length() - 1) == '/');
  }

  /** Reads fields of one record, counting the unusable ones under its kind. */
  private static final class Fields {
    private final NativeMetadataMetrics meters;
    private final String kind;

    Fields(NativeMetadataMetrics meters, String kind) {
      this.meters = meters;
      this.kind = kind;
    }

    void invalid(String field) {
      meters.invalid(kind, field);
    }

    // untyped: a Struct's fields by name

    @Nullable String string(Struct s, String field) {
      Value v = s.getFieldsOrDefault(field, null);
      if (v == null || v.hasNullValue()) {
        return null;
      }
      if (!v.hasStringValue() || v.getStringValue().length() > NativeRequestInfo.MAX_MODEL_CHARS) {
        invalid(field);
        return null;
      }
      return v.getStringValue();
    }

    @Nullable Boolean bool(Struct s, String field) {
      Value v = s.getFieldsOrDefault(field, null);
      if (v == null || v.hasNullValue()) {
        return null;
      }
      if (!v.hasBoolValue()) {
        invalid(field);
        return null;
      }
      return v.getBoolValue();
    }

    /** A whole number in {@code [0, max]}, or -1 (absent, or counted as unusable). */
    long count(Struct s, String field, long max) {
      Value v = s.getFieldsOrDefault(field, null);
      if (v == null || v.hasNullValue()) {
        return -1;
      }
      double d = v.hasNumberValue() ? v.getNumberValue() : Double.NaN;
      if (!(d >= 0 && d <= max) || d != Math.rint(d)) { // NaN, negative, huge, fractional, a string
        invalid(field);
        return -1;
      }
      return (long) d;
    }

    // typed: the wire fields of the Any's value

    @Nullable String string(CodedInputStream in, int tag, String field) throws IOException {
      if (WireFormat.getTagWireType(tag) != WireFormat.WIRETYPE_LENGTH_DELIMITED) {
        in.skipField(tag);
        invalid(field);
        return null;
      }
      int length = in.readRawVarint32();
      if (length < 0 || length > NativeRequestInfo.MAX_MODEL_CHARS * 4) {
        in.skipRawBytes(Math.max(0, length));
        invalid(field);
        return null;
      }
      String s = new String(in.readRawBytes(length), java.nio.charset.StandardCharsets.UTF_8);
      if (s.length() > NativeRequestInfo.MAX_MODEL_CHARS) {
        invalid(field);
        return null;
      }
      return s.isEmpty() ? null : s;
    }

    /**
     * A wrapper message ({@code google.protobuf.UInt64Value}, {@code UInt32Value}, {@code
     * BoolValue}): its field 1 in {@code [0, max]}, 0 when the wrapper is empty, or -1 (counted).
     */
    long wrapped(CodedInputStream in, int tag, String field, long max) throws IOException {
      if (WireFormat.getTagWireType(tag) != WireFormat.WIRETYPE_LENGTH_DELIMITED) {
        in.skipField(tag);
        invalid(field);
        return -1;
      }
      int limit = in.pushLimit(in.readRawVarint32());
      long v = 0;
      boolean bad = false;
      for (int t = in.readTag(); t != 0; t = in.readTag()) {
        if (WireFormat.getTagFieldNumber(t) == 1
            && WireFormat.getTagWireType(t) == WireFormat.WIRETYPE_VARINT) {
          v = in.readRawVarint64(); // unsigned: above 2^63 reads negative, out of bounds
        } else {
          bad |= WireFormat.getTagFieldNumber(t) == 1;
          in.skipField(t);
        }
      }
      in.popLimit(limit);
      if (bad || v < 0 || v > max) {
        invalid(field);
        return -1;
      }
      return v;
    }

    /** {@code input_token_details.cached_tokens}, or -1. */
    long cached(CodedInputStream in, int tag) throws IOException {
      if (WireFormat.getTagWireType(tag) != WireFormat.WIRETYPE_LENGTH_DELIMITED) {
        in.skipField(tag);
        invalid("input_token_details");
        return -1;
      }
      int limit = in.pushLimit(in.readRawVarint32());
      long cached = -1;
      for (int t = in.readTag(); t != 0; t = in.readTag()) {
        if (WireFormat.getTagFieldNumber(t) == 1) {
          cached = wrapped(in, t, "cached_tokens", NativeUsage.MAX_TOKENS);
        } else {
          in.skipField(t);
        }
      }
      in.popLimit(limit);
      return cached;
    }

    int enumValue(CodedInputStream in, int tag, String field) throws IOException {
      if (WireFormat.getTagWireType(tag) != WireFormat.WIRETYPE_VARINT) {
        in.skipField(tag);
        invalid(field);
        return 0;
      }
      int v = in.readEnum();
      if (v < 0 || v > 3) {
        invalid(field);
        return 0;
      }
      return v;
    }
  }
}
