package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.routing.SignalSource;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Reads trusted signals from the first ext_proc message and the stream's initial metadata. */
final class EnvoySignals implements SignalSource {
  static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  private final io.grpc.Metadata initialMetadata;
  private final ProcessingRequest request;
  private final List<HeaderValue> headers;
  private final HeaderIndex index;
  private final HeaderValue[] found; // by HeaderIndex slot, first occurrence

  EnvoySignals(io.grpc.Metadata initialMetadata, ProcessingRequest request) {
    this(initialMetadata, request, null);
  }

  /**
   * With an index of the header names this request may be asked for: one pass over the headers
   * picks them all out, instead of one scan of the whole list per lookup.
   */
  EnvoySignals(io.grpc.Metadata initialMetadata, ProcessingRequest request, HeaderIndex index) {
    this.initialMetadata = initialMetadata;
    this.request = request;
    this.headers = request.getRequestHeaders().getHeaders().getHeadersList();
    this.index = index;
    this.found = index == null ? null : index.pick(headers);
  }

  /** The header names a config's signals (plus Sluice itself) read, laid out for one pass. */
  static final class HeaderIndex {
    private final java.util.Map<String, Integer> slots = new java.util.HashMap<>();
    private final String[][] byLength; // names of each length, then their slots in bySlot order
    private final int[][] slotsByLength;

    HeaderIndex(java.util.Collection<String> names) {
      int max = 0;
      for (String n : names) {
        slots.putIfAbsent(n, slots.size());
        max = Math.max(max, n.length());
      }
      byLength = new String[max + 1][];
      slotsByLength = new int[max + 1][];
      for (java.util.Map.Entry<String, Integer> e : slots.entrySet()) {
        int len = e.getKey().length();
        String[] ns = byLength[len] == null ? new String[0] : byLength[len];
        int[] ss = slotsByLength[len] == null ? new int[0] : slotsByLength[len];
        ns = java.util.Arrays.copyOf(ns, ns.length + 1);
        ss = java.util.Arrays.copyOf(ss, ss.length + 1);
        ns[ns.length - 1] = e.getKey();
        ss[ss.length - 1] = e.getValue();
        byLength[len] = ns;
        slotsByLength[len] = ss;
      }
    }

    HeaderValue[] pick(List<HeaderValue> headers) {
      HeaderValue[] out = new HeaderValue[slots.size()];
      for (int i = 0, n = headers.size(); i < n; i++) {
        HeaderValue h = headers.get(i);
        String k = h.getKey();
        int len = k.length();
        if (len >= byLength.length || byLength[len] == null) {
          continue;
        }
        String[] ns = byLength[len];
        for (int j = 0; j < ns.length; j++) {
          if (ns[j].equals(k)) {
            int slot = slotsByLength[len][j];
            if (out[slot] == null) {
              out[slot] = h;
            }
            break;
          }
        }
      }
      return out;
    }

    /** The slot of {@code name}, or -1 when it is not indexed. */
    int slot(String name) {
      Integer s = slots.get(name);
      return s == null ? -1 : s;
    }
  }

  private static String value(HeaderValue h) {
    return h.getRawValue().isEmpty()
        ? h.getValue()
        : h.getRawValue().toString(StandardCharsets.UTF_8);
  }

  /**
   * The first value of a header, or null. Envoy sends lower-case keys; only the few headers a
   * request needs are decoded (no map of all headers is built on the hot path).
   */
  static String find(List<HeaderValue> list, String name) {
    for (int i = 0, n = list.size(); i < n; i++) {
      HeaderValue h = list.get(i);
      if (h.getKey().equals(name)) {
        return value(h);
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
    if (index != null) {
      int slot = index.slot(name);
      if (slot >= 0) {
        HeaderValue h = found[slot];
        return h == null ? null : value(h);
      }
    }
    return find(headers, name);
  }

  @Override
  public String dynamicMetadata(String namespace, List<String> path) {
    Struct s = request.getMetadataContext().getFilterMetadataOrDefault(namespace, null);
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
    // Looked up only when a signal reads an attribute (the map view costs on every request).
    Value v =
        request
            .getAttributesOrDefault(ATTRIBUTES_KEY, Struct.getDefaultInstance())
            .getFieldsOrDefault(expression, null);
    return v == null ? null : scalar(v);
  }

  @Override
  public String path() {
    String p = header(":path");
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
