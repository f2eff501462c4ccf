package io.sluice.extproc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.sluice.routing.SignalSource;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** Reads trusted signals from the first ext_proc message and the stream's initial metadata. */
final class EnvoySignals implements SignalSource {
  static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";

  private final io.grpc.Metadata initialMetadata;
  private final Inbound request;
  private final @Nullable HeaderIndex index;
  // by HeaderIndex slot: 1 + the place of its first occurrence in the request's headers (0:
  // absent), a byte each (read as 0..255) when it has at most 255 headers, as nearly every
  // request has, else an int each; a value is decoded only when read (a header nobody reads is not)
  private final byte @Nullable [] found;
  private final int @Nullable [] foundFar;
  private final InitialMetadata metadataKeys;

  /** With the tables of the runtime snapshot: its header index and its metadata keys. */
  static EnvoySignals of(io.grpc.Metadata initialMetadata, Inbound request, ExtProcTables tables) {
    return new EnvoySignals(initialMetadata, request, tables.headerIndex(), tables.metadataKeys());
  }

  /**
   * With an index of the header names this request may be asked for: one pass over the headers
   * picks them all out, instead of one scan of the whole list per lookup (null: a scan per lookup).
   */
  EnvoySignals(
      io.grpc.Metadata initialMetadata,
      Inbound request,
      @Nullable HeaderIndex index,
      InitialMetadata metadataKeys) {
    this.initialMetadata = initialMetadata;
    this.metadataKeys = metadataKeys;
    this.request = request;
    this.index = index;
    boolean near = index != null && HeaderIndex.count(request) <= 255; // places 1..255 fit
    this.found = index != null && near ? index.placesNear(request) : null;
    this.foundFar = index != null && !near ? index.places(request) : null;
  }

  /** 1 + the place of slot's header in the request, 0 when absent ({@link #found}). */
  private int place(int slot) {
    byte[] near = found;
    return near != null
        ? near[slot] & 0xFF
        : java.util.Objects.requireNonNull(foundFar, "found")[slot];
  }

  /** The header names a config's signals (plus Sluice itself) read, laid out for one pass. */
  static final class HeaderIndex {
    private final java.util.Map<String, Integer> slots = new java.util.HashMap<>();
    private final String[] names; // by slot
    // the headers Sluice itself reads, by slot (-1: not indexed)
    final int path;
    final int method;
    final int contentType;
    final int contentLength;
    // by length: the names of that length (UTF-16 units for Strings, bytes for wire keys) and slots
    private final String[][] byLength;
    private final int[][] slotsByLength;
    private final io.sluice.wire.ByteKeys wireKeys; // the names' UTF-8 bytes, by slot
    // by slot: the last value decoded there; a wire value of the same (ASCII) bytes is answered
    // with
    // it instead of a new String (a method, path, content type or tenant mostly repeats). Shared by
    // the snapshot's streams: a racy write is benign (a String is immutable, safely published).
    private final @Nullable String[] recent;

    HeaderIndex(java.util.Collection<String> names) {
      int max = 0;
      for (String n : names) {
        slots.putIfAbsent(n, slots.size());
        max = Math.max(max, n.length());
      }
      String[] bySlot = new String[slots.size()];
      slots.forEach((n, slot) -> bySlot[slot] = n);
      this.names = bySlot;
      this.recent = new String[bySlot.length];
      this.path = slot(":path");
      this.method = slot(":method");
      this.contentType = slot("content-type");
      this.contentLength = slot("content-length");
      byLength = new String[max + 1][];
      slotsByLength = new int[max + 1][];
      for (java.util.Map.Entry<String, Integer> e : slots.entrySet()) {
        String name = e.getKey();
        int slot = e.getValue();
        int len = name.length();
        byLength[len] = append(byLength[len], name, String[]::new);
        slotsByLength[len] = append(slotsByLength[len], slot);
      }
      byte[][] utf8 = new byte[bySlot.length][];
      int[] slotOf = new int[bySlot.length];
      for (int slot = 0; slot < bySlot.length; slot++) {
        utf8[slot] = utf8(bySlot[slot]);
        slotOf[slot] = slot;
      }
      wireKeys = new io.sluice.wire.ByteKeys(utf8, slotOf);
    }

    private static byte[] utf8(String s) {
      return s.getBytes(StandardCharsets.UTF_8);
    }

    private static <T> T[] append(T @Nullable [] a, T v, java.util.function.IntFunction<T[]> make) {
      T[] out = a == null ? make.apply(1) : java.util.Arrays.copyOf(a, a.length + 1);
      out[out.length - 1] = v;
      return out;
    }

    private static int[] append(int @Nullable [] a, int v) {
      int[] out = a == null ? new int[1] : java.util.Arrays.copyOf(a, a.length + 1);
      out[out.length - 1] = v;
      return out;
    }

    /** The values of the indexed headers, by slot (first occurrence; null when absent). */
    String[] pick(Inbound in) {
      int[] at = places(in);
      String[] out = new String[at.length];
      for (int slot = 0; slot < at.length; slot++) {
        out[slot] = valueAt(in, at[slot], slot);
      }
      return out;
    }

    /** The request's header count (on the wire, or in the parsed message's list). */
    static int count(Inbound in) {
      return in.fromWire() ? in.headerCount() : in.headerList().size();
    }

    /** {@link #places}' answer a byte each (read as 0..255): for at most 255 headers. */
    byte[] placesNear(Inbound in) {
      byte[] out = new byte[names.length];
      locate(in, out, null);
      return out;
    }

    /**
     * Where the indexed headers are, by slot: 1 + the place of the first occurrence in the
     * request's headers (the wire's, or the parsed message's list), 0 when absent.
     */
    int[] places(Inbound in) {
      int[] out = new int[names.length];
      locate(in, null, out);
      return out;
    }

    /** {@link #places} into {@code near} (a byte each) if given, else into {@code far}. */
    private void locate(Inbound in, byte @Nullable [] near, int @Nullable [] far) {
      if (!in.fromWire()) {
        placesIn(in.headerList(), near, far);
        return;
      }
      for (int i = 0, n = in.headerCount(); i < n; i++) {
        int slot = in.keyIn(i, wireKeys);
        if (slot >= 0) {
          mark(near, far, slot, i + 1);
        }
      }
    }

    private void placesIn(List<HeaderValue> headers, byte @Nullable [] near, int @Nullable [] far) {
      for (int i = 0, n = headers.size(); i < n; i++) {
        String k = headers.get(i).getKey();
        int len = k.length();
        if (len >= byLength.length || byLength[len] == null) {
          continue;
        }
        String[] ns = byLength[len];
        for (int j = 0; j < ns.length; j++) {
          if (ns[j].equals(k)) {
            mark(near, far, slotsByLength[len][j], i + 1);
            break;
          }
        }
      }
    }

    /** Notes {@code place} at {@code slot} unless an earlier occurrence is there. */
    private static void mark(byte @Nullable [] near, int @Nullable [] far, int slot, int place) {
      if (near != null) {
        if (near[slot] == 0) {
          near[slot] = (byte) place;
        }
      } else if (far != null && far[slot] == 0) {
        far[slot] = place;
      }
    }

    /** The value at {@code slot}, whose {@link #places} entry is {@code place}, decoded now. */
    @Nullable String valueAt(Inbound in, int place, int slot) {
      int i = place - 1;
      if (i < 0) {
        return null;
      }
      if (!in.fromWire()) {
        return value(in.headerList().get(i));
      }
      String last = recent[slot];
      String v = in.value(i, last);
      if (v != last) {
        recent[slot] = v;
      }
      return v;
    }

    /** The slot of {@code name}, or -1 when it is not indexed. */
    int slot(String name) {
      Integer s = slots.get(name);
      return s == null ? -1 : s;
    }

    /** Whether {@code slot} is {@code name}'s (by reference first: the config's own strings). */
    boolean holds(int slot, String name) {
      if (slot < 0 || slot >= names.length) {
        return false;
      }
      String held = names[slot];
      return held == name || held.equals(name);
    }
  }

  static String value(HeaderValue h) {
    return h.getRawValue().isEmpty()
        ? h.getValue()
        : h.getRawValue().toString(StandardCharsets.UTF_8);
  }

  /**
   * The first value of a header, or null. Envoy sends lower-case keys; only the few headers a
   * request needs are decoded (no map of all headers is built on the hot path).
   */
  static @Nullable String find(List<HeaderValue> list, String name) {
    for (int i = 0, n = list.size(); i < n; i++) {
      HeaderValue h = list.get(i);
      if (h.getKey().equals(name)) {
        return value(h);
      }
    }
    return null;
  }

  @Override
  public @Nullable String metadata(String key) {
    return metadataKeys.get(initialMetadata, key);
  }

  /** A declared signal's metadata key by its place in the resolver's keys: no key looked up. */
  @Override
  public @Nullable String metadata(int slot, String key) {
    return metadataKeys.get(initialMetadata, slot, key);
  }

  @Override
  public @Nullable String header(String name) {
    HeaderIndex i = index;
    if (i != null) {
      int slot = i.slot(name);
      if (slot >= 0) {
        return i.valueAt(request, place(slot), slot);
      }
    }
    return request.header(name);
  }

  /**
   * A declared signal's header by its place in the resolver's names: the index holds them first, in
   * that order ({@link ExtProcTables}), so no name is looked up per request.
   */
  @Override
  public @Nullable String header(int slot, String name) {
    HeaderIndex i = index;
    if (i != null && i.holds(slot, name)) {
      return i.valueAt(request, place(slot), slot);
    }
    return header(name);
  }

  /** A header Sluice itself reads, by its slot in the index ({@code -1}: not indexed). */
  private @Nullable String own(int slot, String name) {
    HeaderIndex i = index;
    return slot >= 0 && i != null ? i.valueAt(request, place(slot), slot) : header(name);
  }

  @Nullable String method() {
    HeaderIndex i = index;
    return i != null ? own(i.method, ":method") : header(":method");
  }

  @Nullable String contentType() {
    HeaderIndex i = index;
    return i != null ? own(i.contentType, "content-type") : header("content-type");
  }

  @Nullable String contentLength() {
    HeaderIndex i = index;
    return i != null ? own(i.contentLength, "content-length") : header("content-length");
  }

  private @Nullable String pathHeader() {
    HeaderIndex i = index;
    return i != null ? own(i.path, ":path") : header(":path");
  }

  @Override
  public @Nullable String dynamicMetadata(String namespace, List<String> path) {
    if (!request.hasContext()) {
      return null; // none sent: no need to parse the whole message
    }
    Struct s = request.context().getMetadataContext().getFilterMetadataOrDefault(namespace, null);
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
    return v == null ? null : scalar(v); // never null here: the path is not empty
  }

  @Override
  public @Nullable String attribute(String expression) {
    // Looked up only when a signal reads an attribute (the map view costs on every request).
    if (!request.hasContext()) {
      return null; // none sent: no need to parse the whole message
    }
    Value v =
        request
            .context()
            .getAttributesOrDefault(ATTRIBUTES_KEY, Struct.getDefaultInstance())
            .getFieldsOrDefault(expression, null);
    if (v == null) {
      // grpc-java's xDS ext_proc filter keys each attribute by its name, the value under ""
      // (ExternalProcessorUtil.collectAttributes/encodeAttribute, grpc-xds 1.85)
      Struct flat = request.context().getAttributesOrDefault(expression, null);
      v = flat == null ? null : flat.getFieldsOrDefault("", null);
    }
    return v == null ? null : scalar(v);
  }

  @Override
  public @Nullable String path() {
    String p = pathHeader();
    if (p == null) {
      // No pseudo-headers (a proxyless gRPC client): the gRPC method "/pkg.Service/Method" when
      // the filter sends the request.path attribute (request_attributes in its config).
      return method() == null ? attribute("request.path") : null;
    }
    int q = p.indexOf('?');
    return q < 0 ? p : p.substring(0, q);
  }

  private static @Nullable String scalar(Value v) {
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
