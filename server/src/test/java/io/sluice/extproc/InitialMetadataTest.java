package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Metadata;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The declared metadata keys held by slot answer exactly what a lookup by key answers. */
class InitialMetadataTest {
  private static final List<String> DECLARED =
      List.of("x-sluice-tenant", "x-sluice-class", "x-sluice-bin", "x-sluice-pool");

  private static Metadata metadata() {
    Metadata md = new Metadata();
    md.put(Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER), "acme");
    md.put(Metadata.Key.of("x-sluice-class", Metadata.ASCII_STRING_MARSHALLER), "batch");
    md.put(Metadata.Key.of("x-sluice-class", Metadata.ASCII_STRING_MARSHALLER), "second");
    md.put(Metadata.Key.of("x-sluice-bin", Metadata.BINARY_BYTE_MARSHALLER), new byte[] {1});
    return md;
  }

  @Test
  void bySlot_equalsByKey_forEveryDeclaredKey_andFallsBackForAnotherKey() {
    InitialMetadata bySlot = new InitialMetadata(DECLARED);
    InitialMetadata byKey = new InitialMetadata();
    Metadata md = metadata();
    for (int slot = 0; slot < DECLARED.size(); slot++) {
      String key = DECLARED.get(slot);
      assertThat(bySlot.get(md, slot, key)).as(key).isEqualTo(byKey.get(md, key));
      assertThat(bySlot.get(null, slot, key)).isNull();
    }
    assertThat(bySlot.get(md, 0, "x-sluice-tenant")).isEqualTo("acme");
    assertThat(bySlot.get(md, 1, "x-sluice-class")).isEqualTo("second"); // gRPC's last value
    assertThat(bySlot.get(md, 2, "x-sluice-bin")).isNull(); // binary: never read as text
    assertThat(bySlot.get(md, 3, "x-sluice-pool")).isNull();
    // a slot that is not the key's (or out of range): looked up by the key itself
    assertThat(bySlot.get(md, 3, "x-sluice-tenant")).isEqualTo("acme");
    assertThat(bySlot.get(md, 9, "x-sluice-class")).isEqualTo("second");
    assertThat(bySlot.get(md, -1, "x-sluice-tenant")).isEqualTo("acme");
  }

  @Test
  void aKeyGrpcRefuses_isRefusedAtTheRead_asBefore() {
    InitialMetadata bySlot = new InitialMetadata(List.of("bad key"));
    assertThatThrownBy(() -> new InitialMetadata().get(metadata(), "bad key"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> bySlot.get(metadata(), 0, "bad key"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
