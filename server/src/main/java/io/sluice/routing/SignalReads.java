package io.sluice.routing;

import io.sluice.config.SluiceConfig.Source;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Every signal's declared sources, laid out once per config for the per-request reads: one flat run
 * of sources per signal, each with its kind, its name (header, metadata key or attribute) and its
 * slot ({@link SignalSource#header(int, String)}, {@link SignalSource#metadata(int, String)}), so a
 * read dispatches on a byte and calls no record accessor. A read answers the first present
 * (non-empty) value among the signal's sources, in their declared order.
 */
final class SignalReads {
  private static final byte HEADER = 0;
  private static final byte METADATA = 1;
  private static final byte DYNAMIC = 2;
  private static final byte ATTRIBUTE = 3;

  // signal i's sources are [start[i], start[i + 1]) of the arrays below
  private final int[] start;
  private final byte[] kind;
  private final int[] slot; // a header's place in headerNames, a metadata key's in metadataNames
  private final String[] name; // header, metadata key or attribute expression; "" for dynamic
  private final @Nullable Source[] dynamic; // the dynamic metadata sources (null for other kinds)
  private final List<String> headerNames;
  private final List<String> metadataNames;

  SignalReads(Source[][] sources) {
    java.util.Set<String> headers = new java.util.LinkedHashSet<>();
    java.util.Set<String> keys = new java.util.LinkedHashSet<>();
    int n = 0;
    for (Source[] list : sources) {
      for (Source s : list) {
        if (s instanceof Source.Header h) {
          headers.add(h.header());
        } else if (s instanceof Source.Metadata m) {
          keys.add(m.metadata());
        }
        n++;
      }
    }
    this.headerNames = List.copyOf(headers);
    this.metadataNames = List.copyOf(keys);
    this.start = new int[sources.length + 1];
    this.kind = new byte[n];
    this.slot = new int[n];
    this.name = new String[n];
    this.dynamic = new Source[n];
    int at = 0;
    for (int i = 0; i < sources.length; i++) {
      start[i] = at;
      for (Source s : sources[i]) {
        slot[at] = -1;
        name[at] = "";
        if (s instanceof Source.Header h) {
          kind[at] = HEADER;
          name[at] = h.header();
          slot[at] = headerNames.indexOf(h.header());
        } else if (s instanceof Source.Metadata m) {
          kind[at] = METADATA;
          name[at] = m.metadata();
          slot[at] = metadataNames.indexOf(m.metadata());
        } else if (s instanceof Source.DynamicMetadata) {
          kind[at] = DYNAMIC;
          dynamic[at] = s;
        } else {
          kind[at] = ATTRIBUTE;
          name[at] = ((Source.Attribute) s).attribute();
        }
        at++;
      }
    }
    start[sources.length] = at;
  }

  /** Every header name a source reads, in the order their slots count them. */
  List<String> headerNames() {
    return headerNames;
  }

  /** Every metadata key a source reads, in the order their slots count them. */
  List<String> metadataNames() {
    return metadataNames;
  }

  /** The first present (non-empty) value among signal {@code signal}'s sources, or null. */
  @Nullable String read(int signal, SignalSource in) {
    for (int i = start[signal], end = start[signal + 1]; i < end; i++) {
      String v =
          switch (kind[i]) {
            case HEADER -> in.header(slot[i], name[i]);
            case METADATA -> in.metadata(slot[i], name[i]);
            case DYNAMIC -> {
              Source.DynamicMetadata d =
                  (Source.DynamicMetadata) java.util.Objects.requireNonNull(dynamic[i]);
              yield in.dynamicMetadata(d.namespace(), d.path());
            }
            default -> in.attribute(name[i]);
          };
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return null;
  }
}
