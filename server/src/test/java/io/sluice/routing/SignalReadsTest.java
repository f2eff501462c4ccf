package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.SluiceConfig.Source;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * {@link SignalReads} (the sources laid out once per config) answers what the resolver's read did
 * source by source, on random declared sources and random requests: the first present, non-empty
 * value in declared order, each header and metadata key asked by its slot in the names lists.
 */
class SignalReadsTest {
  private static final String[] HEADERS = {"x-a", "x-b", "x-tenant-id", "idempotency-key", "x-c"};
  private static final String[] KEYS = {"x-sluice-pool", "x-sluice-class", "x-m", "x-n"};
  private static final String[] ATTRIBUTES = {"request.path", "source.address"};
  private static final String[] VALUES = {"", "a", "b", "42", " 7 "};

  @Test
  void agreesWithASourceBySourceReadOnRandomSourcesAndRequests() {
    Random random = new Random(330);
    for (int config = 0; config < 300; config++) {
      Source[][] sources = randomSources(random);
      SignalReads reads = new SignalReads(sources);
      assertThat(reads.headerNames()).isEqualTo(names(sources, true));
      assertThat(reads.metadataNames()).isEqualTo(names(sources, false));
      for (int request = 0; request < 30; request++) {
        Request in = randomRequest(random, reads);
        for (int signal = 0; signal < sources.length; signal++) {
          assertThat(reads.read(signal, in))
              .as("config %d request %d signal %d", config, request, signal)
              .isEqualTo(sourceBySource(sources[signal], in));
        }
      }
    }
  }

  /** The resolver's read before {@link SignalReads}: each source's kind tested in turn. */
  private static @Nullable String sourceBySource(Source[] declared, SignalSource in) {
    for (Source s : declared) {
      String v;
      if (s instanceof Source.Metadata m) {
        v = in.metadata(m.metadata());
      } else if (s instanceof Source.Header h) {
        v = in.header(h.header());
      } else if (s instanceof Source.DynamicMetadata d) {
        v = in.dynamicMetadata(d.namespace(), d.path());
      } else {
        v = in.attribute(((Source.Attribute) s).attribute());
      }
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return null;
  }

  private static List<String> names(Source[][] sources, boolean headers) {
    LinkedHashSet<String> out = new LinkedHashSet<>();
    for (Source[] list : sources) {
      for (Source s : list) {
        if (headers && s instanceof Source.Header h) {
          out.add(h.header());
        } else if (!headers && s instanceof Source.Metadata m) {
          out.add(m.metadata());
        }
      }
    }
    return List.copyOf(out);
  }

  private static Source[][] randomSources(Random random) {
    Source[][] out = new Source[1 + random.nextInt(14)][];
    for (int i = 0; i < out.length; i++) {
      out[i] = new Source[random.nextInt(4)];
      for (int j = 0; j < out[i].length; j++) {
        out[i][j] =
            switch (random.nextInt(4)) {
              case 0 -> new Source.Header(pick(random, HEADERS));
              case 1 -> new Source.Metadata(pick(random, KEYS));
              case 2 -> new Source.DynamicMetadata("ns" + random.nextInt(2), List.of("k"));
              default -> new Source.Attribute(pick(random, ATTRIBUTES));
            };
      }
    }
    return out;
  }

  private static Request randomRequest(Random random, SignalReads reads) {
    Request r = new Request(reads.headerNames(), reads.metadataNames());
    for (String h : HEADERS) {
      maybePut(random, r.headers, h);
    }
    for (String k : KEYS) {
      maybePut(random, r.metadata, k);
    }
    for (String a : ATTRIBUTES) {
      maybePut(random, r.attributes, a);
    }
    maybePut(random, r.dynamic, "ns0");
    maybePut(random, r.dynamic, "ns1");
    return r;
  }

  private static void maybePut(Random random, Map<String, String> map, String key) {
    if (random.nextInt(3) == 0) {
      map.put(key, pick(random, VALUES));
    }
  }

  private static String pick(Random random, String[] from) {
    return from[random.nextInt(from.length)];
  }

  /** A request of random values that checks each slot names the key it is asked with. */
  private static final class Request implements SignalSource {
    final Map<String, String> headers = new HashMap<>();
    final Map<String, String> metadata = new HashMap<>();
    final Map<String, String> attributes = new HashMap<>();
    final Map<String, String> dynamic = new HashMap<>();
    private final List<String> headerNames;
    private final List<String> metadataNames;

    Request(List<String> headerNames, List<String> metadataNames) {
      this.headerNames = new ArrayList<>(headerNames);
      this.metadataNames = new ArrayList<>(metadataNames);
    }

    @Override
    public @Nullable String metadata(String key) {
      return metadata.get(key);
    }

    @Override
    public @Nullable String metadata(int slot, String key) {
      assertThat(metadataNames.get(slot)).isEqualTo(key);
      return metadata(key);
    }

    @Override
    public @Nullable String header(String name) {
      return headers.get(name);
    }

    @Override
    public @Nullable String header(int slot, String name) {
      assertThat(headerNames.get(slot)).isEqualTo(name);
      return header(name);
    }

    @Override
    public @Nullable String dynamicMetadata(String namespace, List<String> path) {
      return dynamic.get(namespace);
    }

    @Override
    public @Nullable String attribute(String expression) {
      return attributes.get(expression);
    }

    @Override
    public @Nullable String path() {
      return null;
    }
  }
}
