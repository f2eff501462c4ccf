package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The wire reader gives exactly what protobuf-java's parse, mapped, gives. */
class RlsRequestReaderTest {
  @Test
  void equalsProtobufMapped() {
    int tries = 500;
    AtomicInteger wire = new AtomicInteger();
    Seeded.forAll(
        0x5EED_0C01L,
        tries,
        RlsRequestReaderTest::request,
        req -> {
          byte[] bytes = req.toByteArray();
          if (RlsRequestReader.readsPlain(bytes)) {
            wire.incrementAndGet();
          }
          assertThat(RlsRequestReader.read(bytes))
              .isEqualTo(RlsProtoMapper.toRequest(RateLimitRequest.parseFrom(bytes)));
        });
    // not vacuous: the wire reader, not the protobuf fallback, reads a fair share
    assertThat(100.0 * wire.get() / tries).as("%% read from the wire").isGreaterThan(15);
  }

  record Two(RateLimitRequest a, RateLimitRequest b) {}

  @Test
  void concatenatedRequestsMergeAsInProtobuf() {
    Seeded.forAll(
        0x5EED_0C02L,
        300,
        g -> new Two(request(g), request(g)),
        t -> {
          ByteArrayOutputStream o = new ByteArrayOutputStream();
          t.a().writeTo(o);
          t.b().writeTo(o);
          byte[] bytes = o.toByteArray();
          assertThat(RlsRequestReader.read(bytes))
              .isEqualTo(RlsProtoMapper.toRequest(RateLimitRequest.parseFrom(bytes)));
        });
  }

  record Damage(RateLimitRequest req, int where, int value, int how) {}

  @Test
  void damagedBytesAreRefusedOrReadAsProtobufDoes() {
    Seeded.forAll(
        0x5EED_0C03L,
        2000,
        g ->
            new Damage(
                request(g), g.intBetween(0, 10_000), g.intBetween(0, 255), g.intBetween(0, 1)),
        c -> {
          byte[] bytes = c.req().toByteArray();
          if (bytes.length == 0) {
            return;
          }
          int at = c.where() % bytes.length;
          byte[] damaged;
          if (c.how() == 0) {
            damaged = bytes.clone();
            damaged[at] = (byte) c.value();
          } else {
            damaged = java.util.Arrays.copyOf(bytes, at);
          }
          RateLimitRequest expected;
          try {
            expected = RateLimitRequest.parseFrom(damaged);
          } catch (InvalidProtocolBufferException e) {
            try {
              RlsRequestReader.read(damaged);
            } catch (InvalidProtocolBufferException alsoRefused) {
              return;
            }
            throw new AssertionError(
                "protobuf refused " + java.util.HexFormat.of().formatHex(damaged) + ": " + e);
          }
          assertThat(RlsRequestReader.read(damaged)).isEqualTo(RlsProtoMapper.toRequest(expected));
        });
  }

  /** Requests: short keys/values over a few chars, up to three descriptors of three entries. */
  static RateLimitRequest request(Gen g) {
    return RateLimitRequest.newBuilder()
        .setDomain(text(g))
        .addAllDescriptors(g.list(0, 3, () -> descriptor(g)))
        .setHitsAddend(g.intBetween(-3, 1 << 20))
        .build();
  }

  private static RateLimitDescriptor descriptor(Gen g) {
    RateLimitDescriptor.Builder b =
        RateLimitDescriptor.newBuilder()
            .addAllEntries(
                g.list(
                    0,
                    3,
                    () ->
                        RateLimitDescriptor.Entry.newBuilder()
                            .setKey(text(g))
                            .setValue(text(g))
                            .build()));
    int shape = g.intBetween(0, 9);
    long n = g.longBetween(0, 1L << 40);
    if (shape == 0) {
      b.setLimit(
          RateLimitDescriptor.RateLimitOverride.newBuilder()
              .setUnitValue(2)
              .setRequestsPerUnit((int) n));
    } else if (shape == 1) {
      b.setHitsAddend(UInt64Value.of(n));
    }
    return b.build();
  }

  private static String text(Gen g) {
    return g.string("ab_-.\u00e9", 0, 5);
  }

  private static byte[] call(String domain, String key, String value) {
    return RateLimitRequest.newBuilder()
        .setDomain(domain)
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value)))
        .build()
        .toByteArray();
  }

  @Test
  void aRecentDomainAndKeyAreHandedOutAgainValuesAreNot() throws Exception {
    RlsRequest first = RlsRequestReader.read(call("bench", "tenant", "acme"));
    RlsRequest again = RlsRequestReader.read(call("bench", "tenant", "acme"));
    assertThat(again).isEqualTo(first);
    assertThat(again.domain()).isSameAs(first.domain());
    var e1 = first.descriptors().get(0).entries().get(0);
    var e2 = again.descriptors().get(0).entries().get(0);
    assertThat(e2.key()).isSameAs(e1.key());
    assertThat(e2.value()).isNotSameAs(e1.value()); // one per user, often: not kept
    // same length, first and last byte (one slot): the other string, read right
    RlsRequest other = RlsRequestReader.read(call("bxxch", "tXnXnt", "acme"));
    assertThat(other.domain()).isEqualTo("bxxch");
    assertThat(other.descriptors().get(0).entries().get(0).key()).isEqualTo("tXnXnt");
    assertThat(RlsRequestReader.read(call("bench", "tenant", "")).domain()).isEqualTo("bench");
    assertThat(RlsRequestReader.read(call("", "", "")).domain()).isEmpty();
  }
}
