package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The one-pass header index answers exactly what a scan of the header list answers. */
class EnvoySignalsTest {
  private static final List<String> NAMES =
      List.of(
          ":path", "x-tenant-id", "x-request-id", "idempotency-key", "content-length", "a", "b");

  record Case(List<HeaderValue> headers, Set<String> indexed) {}

  @Test
  void indexedLookupsEqualTheScan() {
    Seeded.forAll(
        0x5EED_0D01L,
        300,
        g -> new Case(g.list(0, 12, () -> header(g)), g.set(5, () -> g.oneOf(NAMES))),
        c -> {
          ProcessingRequest req = request(c.headers());
          EnvoySignals plain = new EnvoySignals(null, Inbound.of(req), null, new InitialMetadata());
          EnvoySignals fast =
              new EnvoySignals(
                  null,
                  wire(req),
                  new EnvoySignals.HeaderIndex(c.indexed()),
                  new InitialMetadata());
          for (String name : NAMES) {
            assertThat(fast.header(name))
                .as(name)
                .isEqualTo(EnvoySignals.find(headersOf(req), name));
            assertThat(fast.header(name)).isEqualTo(plain.header(name));
          }
          assertThat(fast.path()).isEqualTo(plain.path());
        });
  }

  @Test
  void firstOccurrenceWinsAndValueFallsBackToTheStringField() {
    ProcessingRequest req =
        request(
            List.of(
                HeaderValue.newBuilder().setKey("x-tenant-id").setValue("from-value").build(),
                raw("x-tenant-id", "second"),
                raw(":path", "/v1/chat/completions?x=1")));
    EnvoySignals s =
        new EnvoySignals(
            null,
            wire(req),
            new EnvoySignals.HeaderIndex(List.of("x-tenant-id", ":path")),
            new InitialMetadata());
    assertThat(s.header("x-tenant-id")).isEqualTo("from-value");
    assertThat(s.path()).isEqualTo("/v1/chat/completions");
    assertThat(s.header("x-missing")).isNull();
  }

  /**
   * One index across requests, as a runtime snapshot's: a value read again is the String read last
   * (not a new one), and every value, non-ASCII and invalid UTF-8 bytes of the last one's length
   * included, reads as protobuf-java's message has it.
   */
  @Test
  void aRepeatedValueIsTheLastString_andEveryValueReadsAsTheMessageHasIt() {
    EnvoySignals.HeaderIndex index = new EnvoySignals.HeaderIndex(List.of("x-tenant-id"));
    List<ByteString> values =
        List.of(
            ByteString.copyFromUtf8("acme"),
            ByteString.copyFromUtf8("acmf"),
            ByteString.copyFromUtf8("\u00e9"), // two bytes, one char
            ByteString.copyFrom(new byte[] {(byte) 0xE9}), // invalid UTF-8: one byte, one char
            ByteString.copyFrom(new byte[] {(byte) 0xC3, (byte) 0xA9}),
            ByteString.copyFromUtf8("ab"),
            ByteString.EMPTY);
    Seeded.forAll(
        0x5EED_0D02L,
        300,
        g -> g.oneOf(values),
        v -> {
          ProcessingRequest req =
              request(
                  List.of(HeaderValue.newBuilder().setKey("x-tenant-id").setRawValue(v).build()));
          assertThat(tenant(index, req))
              .isEqualTo(EnvoySignals.find(headersOf(req), "x-tenant-id"));
        });
    ProcessingRequest acme = request(List.of(raw("x-tenant-id", "acme")));
    String first = tenant(index, acme);
    assertThat(tenant(index, acme)).isSameAs(first).isEqualTo("acme");
  }

  private static String tenant(EnvoySignals.HeaderIndex index, ProcessingRequest req) {
    return new EnvoySignals(null, wire(req), index, new InitialMetadata()).header("x-tenant-id");
  }

  private static final String ALPHA = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

  private static HeaderValue header(Gen g) {
    return raw(g.oneOf(NAMES), g.string(ALPHA, 0, 6));
  }

  private static HeaderValue raw(String k, String v) {
    return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
  }

  private static Inbound wire(ProcessingRequest req) {
    try {
      return Inbound.parse(req.toByteArray());
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  private static List<HeaderValue> headersOf(ProcessingRequest r) {
    return r.getRequestHeaders().getHeaders().getHeadersList();
  }

  private static ProcessingRequest request(List<HeaderValue> headers) {
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(
            HttpHeaders.newBuilder().setHeaders(HeaderMap.newBuilder().addAllHeaders(headers)))
        .build();
  }
}
