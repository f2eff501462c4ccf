package io.sluice.emulator;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.emulator.FilterConfig.BodyMode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Conversions between the emulator's values and the ext_proc protos, stateless. */
final class ExtProcMessages {
  private ExtProcMessages() {}

  /**
   * Merges a response's {@code dynamic_metadata} into {@code into}: per namespace the filter
   * receives, a struct is merged into what earlier responses set; anything else is dropped.
   */
  static void mergeDynamicMetadata(
      ProcessingResponse response, Set<String> receivingNamespaces, Struct.Builder into) {
    if (!response.hasDynamicMetadata()) {
      return;
    }
    for (Map.Entry<String, Value> e : response.getDynamicMetadata().getFieldsMap().entrySet()) {
      if (!receivingNamespaces.contains(e.getKey()) || !e.getValue().hasStructValue()) {
        continue;
      }
      Struct existing =
          into.getFieldsOrDefault(e.getKey(), Value.getDefaultInstance()).getStructValue();
      Struct merged = existing.toBuilder().mergeFrom(e.getValue().getStructValue()).build();
      into.putFields(e.getKey(), Value.newBuilder().setStructValue(merged).build());
    }
  }

  static byte[] applyBodyMutation(BodyMutation mutation, byte[] original) {
    return switch (mutation.getMutationCase()) {
      case BODY -> mutation.getBody().toByteArray();
      case CLEAR_BODY -> mutation.getClearBody() ? new byte[0] : original;
      default -> original;
    };
  }

  static HeaderMap toHeaderMap(io.sluice.upstream.HttpHeaders headers) {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    for (Map.Entry<String, String> e : headers.entries()) {
      map.addHeaders(
          HeaderValue.newBuilder()
              .setKey(e.getKey())
              .setRawValue(ByteString.copyFrom(e.getValue(), StandardCharsets.UTF_8)));
    }
    return map.build();
  }

  static Struct toStruct(Map<String, Object> values) {
    Struct.Builder struct = Struct.newBuilder();
    values.forEach((k, v) -> struct.putFields(k, toValue(v)));
    return struct.build();
  }

  private static Value toValue(Object v) {
    if (v instanceof Value value) {
      return value;
    }
    if (v instanceof Boolean b) {
      return Value.newBuilder().setBoolValue(b).build();
    }
    if (v instanceof Number n) {
      return Value.newBuilder().setNumberValue(n.doubleValue()).build();
    }
    return Value.newBuilder().setStringValue(String.valueOf(v)).build();
  }

  static ProcessingMode.BodySendMode toProto(BodyMode mode) {
    return switch (mode) {
      case NONE -> ProcessingMode.BodySendMode.NONE;
      case STREAMED -> ProcessingMode.BodySendMode.STREAMED;
      case BUFFERED -> ProcessingMode.BodySendMode.BUFFERED;
    };
  }

  static byte[] concat(List<byte[]> chunks) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] c : chunks) {
      out.writeBytes(c);
    }
    return out.toByteArray();
  }

  static String replaceWhitespace(String s) {
    return s.replaceAll("\\s", "_");
  }
}
