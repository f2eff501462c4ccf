package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.io.ByteArrayOutputStream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.statistics.Statistics;

/** The wire reader gives exactly what protobuf-java's parse, mapped, gives. */
class RlsRequestReaderTest {
  @Property(tries = 500)
  void equalsProtobufMapped(@ForAll("requests") RateLimitRequest req) throws Exception {
    byte[] bytes = req.toByteArray();
    Statistics.collect(RlsRequestReader.readsPlain(bytes) ? "wire" : "protobuf");
    assertThat(RlsRequestReader.read(bytes))
        .isEqualTo(RlsProtoMapper.toRequest(RateLimitRequest.parseFrom(bytes)));
    Statistics.coverage(c -> c.check("wire").percentage(p -> p > 15)); // not vacuous
  }

  @Property(tries = 300)
  void concatenatedRequestsMergeAsInProtobuf(
      @ForAll("requests") RateLimitRequest a, @ForAll("requests") RateLimitRequest b)
      throws Exception {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    a.writeTo(o);
    b.writeTo(o);
    byte[] bytes = o.toByteArray();
    assertThat(RlsRequestReader.read(bytes))
        .isEqualTo(RlsProtoMapper.toRequest(RateLimitRequest.parseFrom(bytes)));
  }

  @Property(tries = 2000)
  void damagedBytesAreRefusedOrReadAsProtobufDoes(
      @ForAll("requests") RateLimitRequest req,
      @ForAll @IntRange(min = 0, max = 10_000) int where,
      @ForAll @IntRange(min = 0, max = 255) int value,
      @ForAll @IntRange(min = 0, max = 1) int how)
      throws Exception {
    byte[] bytes = req.toByteArray();
    if (bytes.length == 0) {
      return;
    }
    int at = where % bytes.length;
    byte[] damaged;
    if (how == 0) {
      damaged = bytes.clone();
      damaged[at] = (byte) value;
    } else {
      damaged = java.util.Arrays.copyOf(bytes, at);
    }
    RateLimitRequest expected;
    try {
      expected = RateLimitRequest.parseFrom(damaged);
    } catch (InvalidProtocolBufferException e) {
      Statistics.collect("refused");
      try {
        RlsRequestReader.read(damaged);
      } catch (InvalidProtocolBufferException alsoRefused) {
        return;
      }
      throw new AssertionError(
          "protobuf refused " + java.util.HexFormat.of().formatHex(damaged) + ": " + e);
    }
    Statistics.collect(RlsRequestReader.readsPlain(damaged) ? "read from wire" : "parsed");
    assertThat(RlsRequestReader.read(damaged)).isEqualTo(RlsProtoMapper.toRequest(expected));
  }

  @Provide
  Arbitrary<RateLimitRequest> requests() {
    Arbitrary<String> text = Arbitraries.strings().withChars("ab_-.é").ofMaxLength(5);
    Arbitrary<RateLimitDescriptor.Entry> entry =
        Combinators.combine(text, text)
            .as((k, v) -> RateLimitDescriptor.Entry.newBuilder().setKey(k).setValue(v).build());
    Arbitrary<RateLimitDescriptor> descriptor =
        Combinators.combine(
                entry.list().ofMaxSize(3),
                Arbitraries.integers().between(0, 9),
                Arbitraries.longs().between(0, 1L << 40))
            .as(
                (entries, shape, n) -> {
                  RateLimitDescriptor.Builder b =
                      RateLimitDescriptor.newBuilder().addAllEntries(entries);
                  if (shape == 0) {
                    b.setLimit(
                        RateLimitDescriptor.RateLimitOverride.newBuilder()
                            .setUnitValue(2)
                            .setRequestsPerUnit(n.intValue()));
                  } else if (shape == 1) {
                    b.setHitsAddend(UInt64Value.of(n));
                  }
                  return b.build();
                });
    return Combinators.combine(
            text, descriptor.list().ofMaxSize(3), Arbitraries.integers().between(-3, 1 << 20))
        .as(
            (domain, ds, hits) ->
                RateLimitRequest.newBuilder()
                    .setDomain(domain)
                    .addAllDescriptors(ds)
                    .setHitsAddend(hits)
                    .build());
  }
}
