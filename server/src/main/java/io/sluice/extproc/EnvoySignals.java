package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.routing.SignalSource;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Reads trusted signals from the first ext_proc message and the stream's initial metadata. */
final class EnvoySignals implements SignalSource {
  static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  private final io.grpc.Metadata initialMetadata;
  private final Map<String, String> headers;
  private final Metadata metadataContext;
  private final Struct attributes;

  EnvoySignals(io.grpc.Metadata initialMetadata, ProcessingRequest request) {
    this.initialMetadata = initialMetadata;
    this.headers = headers(request.getRequestHeaders().getHeaders().getHeadersList());
    this.metadataContext = request.getMetadataContext();
    this.attributes = request.getAttributesOrDefault(ATTRIBUTES_KEY, Struct.getDefaultInstance());
  }

  static Map<String, String> headers(List<HeaderValue> list) {
    Map<String, String> out = new HashMap<>(list.size() * 2);
    for (HeaderValue h : list) {
      String v =
          h.getRawValue().isEmpty()
              ? h.getValue()
              : h.getRawValue().toString(StandardCharsets.UTF_8);
      out.putIfAbsent(h.getKey().toLowerCase(java.util.Locale.ROOT), v);
    }
    return out;
  }

  Map<String, String> headers() {
    return headers;
  }

  @Override
  public String metadata(String key) {
    return InitialMetadata.get(initialMetadata, key);
  }

  @Override
  public String header(String name) {
    return headers.get(name);
  }

  @Override
  public String dynamicMetadata(String namespace, List<String> path) {
    Struct s = metadataContext.getFilterMetadataOrDefault(namespace, null);
    if (s == null || path.isEmpty()) {
      return null;
    }
    Value v = null;
    for (String seg : path) {
      v = s.getFieldsOrDefault(seg, null);
      if (v == null) {
        return null;
      }
      s = v.hasStructValue() ? v.getStructValue() : Struct.getDefaultInstance();
    }
    return scalar(v);
  }

  @Override
  public String attribute(String expression) {
    Value v = attributes.getFieldsOrDefault(expression, null);
    return v == null ? null : scalar(v);
  }

  @Override
  public String path() {
    String p = headers.get(":path");
    if (p == null) {
      return null;
    }
    int q = p.indexOf('?');
    return q < 0 ? p : p.substring(0, q);
  }

  private static String scalar(Value v) {
    return switch (v.getKindCase()) {
      case STRING_VALUE -> v.getStringValue();
      case NUMBER_VALUE -> {
        double d = v.getNumberValue();
        yield d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
      }
      case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
      default -> null;
    };
  }
}
