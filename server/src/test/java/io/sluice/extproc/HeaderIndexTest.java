package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The header index finds a wire key by its length and its first and last eight bytes ({@link
 * io.sluice.wire.ByteKeys}): on seeded header sets whose keys are the indexed names, near misses of
 * them (one character changed, one more or one fewer, the same head or tail) and repeats, its
 * places and values are those of a plain scan of the parsed list by {@code String.equals}, first
 * occurrence winning.
 */
class HeaderIndexTest {
  private static final List<String> BASE =
      List.of(
          ":path",
          ":method",
          "content-type",
          "content-length",
          "x-tenant-id",
          "x-sluice-timeout-ms",
          "idempotency-key",
          "x-stainless-retry-count",
          "x-envoy-attempt-count",
          "a",
          "x-tenant-iD",
          "x-" + "k".repeat(40));

  record Case(List<String> indexed, List<String[]> headers) {}

  @Test
  void nearMissKeys_placesAndValuesAreThoseOfAScanOfTheList() throws Exception {
    int[] wire = new int[1];
    Seeded.forAll(
        0x5EED_0350L,
        500,
        g -> {
          java.util.Set<String> indexed = new java.util.LinkedHashSet<>();
          for (String n : BASE) {
            if (g.chance(0.7)) {
              indexed.add(g.chance(0.8) ? n : near(g, n)); // distinct: a slot each
            }
          }
          List<String[]> headers = new ArrayList<>();
          int n = g.intBetween(0, 30);
          for (int i = 0; i < n; i++) {
            String base = g.oneOf(BASE);
            String key = g.chance(0.5) ? base : near(g, base);
            headers.add(new String[] {key, g.string("ab/ 09", 0, 12)});
          }
          return new Case(List.copyOf(indexed), headers);
        },
        c -> {
          HeaderMap.Builder map = HeaderMap.newBuilder();
          for (String[] h : c.headers()) {
            map.addHeaders(
                HeaderValue.newBuilder()
                    .setKey(h[0])
                    .setRawValue(com.google.protobuf.ByteString.copyFromUtf8(h[1])));
          }
          ProcessingRequest req =
              ProcessingRequest.newBuilder()
                  .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(map))
                  .build();
          EnvoySignals.HeaderIndex index = new EnvoySignals.HeaderIndex(c.indexed());
          int[] expected = new int[c.indexed().size()];
          String[] values = new String[expected.length];
          for (int s = 0; s < expected.length; s++) {
            String name = c.indexed().get(s);
            int slot = index.slot(name);
            for (int i = 0; i < c.headers().size() && expected[slot] == 0; i++) {
              if (c.headers().get(i)[0].equals(name)) {
                expected[slot] = i + 1;
                values[slot] = c.headers().get(i)[1];
              }
            }
          }
          Inbound fromBytes = Inbound.parse(req.toByteArray());
          if (fromBytes.fromWire()) {
            wire[0]++;
          }
          for (Inbound in : List.of(fromBytes, Inbound.of(req))) {
            assertThat(index.places(in)).containsExactly(expected);
            assertThat(index.pick(in)).containsExactly(values);
          }
        });
    assertThat(wire[0]).as("read from the wire").isGreaterThan(400);
  }

  /** {@code name} with one character changed (sometimes to a non-ASCII one), added or dropped. */
  private static String near(Gen g, String name) {
    StringBuilder b = new StringBuilder(name);
    int at = g.intBetween(0, name.length());
    switch (g.intBetween(0, 2)) {
      case 0 -> {
        if (at < b.length()) {
          b.setCharAt(at, g.chance(0.05) ? 'é' : g.oneOf('a', 'D', '-', 'x'));
        }
      }
      case 1 -> b.insert(at, 'k');
      default -> {
        if (at < b.length()) {
          b.deleteCharAt(at);
        }
      }
    }
    return b.toString();
  }
}
