package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Metadata;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 34: a stream's declared metadata keys are found in one pass over its initial metadata (at
 * the first read), and each read answers exactly what gRPC's own lookup by key answers: the last
 * value of a repeated key, null for an absent or binary one, and by key past a byte's places.
 */
class MetadataOnePassTest {
  private static final List<String> DECLARED =
      List.of(
          "x-sluice-tenant", "X-Sluice-Class", "x-sluice-pool", "x-sluice-bin", "x-sluice-route");

  private static Metadata.Key<String> text(String name) {
    return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
  }

  private static Inbound request() {
    return Inbound.of(
        io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.newBuilder()
            .setRequestHeaders(
                io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders.getDefaultInstance())
            .build());
  }

  /** Every declared slot read through the stream's signals equals gRPC's lookup by key. */
  private static void assertEveryReadAsByKey(Metadata md) {
    InitialMetadata keys = new InitialMetadata(DECLARED);
    EnvoySignals signals = new EnvoySignals(md, request(), null, keys);
    for (int slot = 0; slot < DECLARED.size(); slot++) {
      String key = DECLARED.get(slot);
      String expected = key.endsWith(Metadata.BINARY_HEADER_SUFFIX) ? null : md.get(text(key));
      assertThat(signals.metadata(slot, key)).as(key).isEqualTo(expected);
      assertThat(signals.metadata(slot, key)).as("again: " + key).isEqualTo(expected);
    }
    // not the slot's key: looked up by the key itself
    assertThat(signals.metadata(0, "x-sluice-pool")).isEqualTo(md.get(text("x-sluice-pool")));
  }

  @Test
  void theLastValueOfARepeatedKey_andNullForAbsentOrBinaryKeys() {
    Metadata md = new Metadata();
    md.put(text("content-type"), "application/grpc");
    md.put(text("x-sluice-class"), "batch");
    md.put(text("x-sluice-tenant"), "acme");
    md.put(Metadata.Key.of("x-sluice-bin", Metadata.BINARY_BYTE_MARSHALLER), new byte[] {1});
    md.put(text("x-sluice-class"), "second");
    md.put(text("user-agent"), "envoy");
    assertEveryReadAsByKey(md);
    EnvoySignals signals = new EnvoySignals(md, request(), null, new InitialMetadata(DECLARED));
    assertThat(signals.metadata(1, "X-Sluice-Class")).isEqualTo("second"); // gRPC's last value
    assertThat(signals.metadata(0, "x-sluice-tenant")).isEqualTo("acme");
    assertThat(signals.metadata(2, "x-sluice-pool")).isNull();
    assertThat(signals.metadata(3, "x-sluice-bin")).isNull();
  }

  @Test
  void aKeyDeclaredTwice_readsTheSameValueAtBothSlots() {
    List<String> twice = List.of("x-sluice-tenant", "X-Sluice-Tenant", "x-sluice-pool");
    Metadata md = new Metadata();
    md.put(text("x-sluice-tenant"), "acme");
    md.put(text("x-sluice-pool"), "gpu");
    EnvoySignals signals = new EnvoySignals(md, request(), null, new InitialMetadata(twice));
    assertThat(signals.metadata(0, "x-sluice-tenant")).isEqualTo("acme");
    assertThat(signals.metadata(1, "X-Sluice-Tenant")).isEqualTo("acme");
    assertThat(signals.metadata(2, "x-sluice-pool")).isEqualTo("gpu");
  }

  @Test
  void emptyMetadata_andMetadataOfNoDeclaredKey() {
    assertEveryReadAsByKey(new Metadata());
    Metadata md = new Metadata();
    md.put(text("te"), "trailers");
    md.put(text("x-sluice-tenants"), "a longer name"); // a prefix of it is declared
    md.put(text("x-sluice-pooh"), "same length");
    assertEveryReadAsByKey(md);
  }

  @Test
  void metadataOfMoreEntriesThanAByteCounts_isReadByKey() {
    // 120 fillers make 127 entries (254 names and values: the last that fit), 121 one more
    for (int entries : new int[] {40, 120, 121, 300}) {
      Metadata md = new Metadata();
      List<String> values = new ArrayList<>();
      for (int i = 0; i < entries; i++) {
        md.put(text("x-filler-" + i), "v" + i);
        if (i % 20 == 19) {
          md.put(text("x-sluice-route"), "route-" + i);
          values.add("route-" + i);
        }
      }
      md.put(text("x-sluice-pool"), "last-pool");
      assertEveryReadAsByKey(md);
      EnvoySignals signals = new EnvoySignals(md, request(), null, new InitialMetadata(DECLARED));
      assertThat(signals.metadata(2, "x-sluice-pool"))
          .as("%d entries", entries)
          .isEqualTo("last-pool");
      assertThat(signals.metadata(4, "x-sluice-route"))
          .as("%d entries", entries)
          .isEqualTo(values.get(values.size() - 1));
    }
  }
}
