package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.routing.SignalSource;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Reads trusted signals from the first ext_proc message and the stream's initial metadata. */
final class EnvoySignals implements SignalSource {
  static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  private final io.grpc.Metadata initialMetadata;
  private final List<HeaderValue> headers;
  private final Metadata metadataContext;
  private final Struct attributes;

  EnvoySignals(io.grpc.Metadata initialMetadata, ProcessingRequest request) {
    this.initialMetadata = initialMetadata;
    this.headers = request.getRequestHeaders().getHeaders().getHeadersList();
    this.metadataContext = request.getMetadataContext();
    this.attributes = request.getAttributesOrDefault(ATTRIBUTES_KEY, Struct.getDefaultInstance());
  }

  /**
   * The first value of a header, or null. Envoy sends lower-case keys; only the few headers a
   * request needs are decoded (no map of all headers is built on the hot path).
   */
  static String find(List<HeaderValue> list, String name) {
    for (int i = 0, n = list.size(); i < n; i++) {
      HeaderValue h = list.get(i);
      if (h.getKey().equals(name)) {
        return h.getRawValue().isEmpty()
            ? h.getValue()
            : h.getRawValue().toString(StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  @Override
  public String metadata(String key) {
    return InitialMetadata.get(initialMetadata, key);
  }

  @Override
  public String header(String name) {
    return find(headers, name);
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
    String p = find(headers, ":path");
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
