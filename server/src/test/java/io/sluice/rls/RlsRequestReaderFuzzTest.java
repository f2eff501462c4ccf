package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.util.HexFormat;

/**
 * Coverage-guided: the RLS wire reader ({@link RlsRequestReader#read}) agrees with protobuf-java on
 * every byte string — it refuses exactly what protobuf-java refuses, throws nothing else, and reads
 * exactly {@link RlsProtoMapper#toRequest} of protobuf-java's parse (domain, every descriptor's
 * entries in order, overrides, hits_addend). Seeds: {@code
 * RlsRequestReaderFuzzTestInputs/readerAgreesWithProtobuf/} (docs/testing.md).
 */
class RlsRequestReaderFuzzTest {
  @FuzzTest(maxDuration = "2m")
  void readerAgreesWithProtobuf(byte[] bytes) {
    byte[] copy = bytes.clone();
    RateLimitRequest expected;
    try {
      expected = RateLimitRequest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException refused) {
      try {
        RlsRequestReader.read(bytes);
      } catch (InvalidProtocolBufferException alsoRefused) {
        return;
      }
      throw new AssertionError(
          "protobuf-java refuses " + HexFormat.of().formatHex(bytes) + " (" + refused + ")");
    }
    RlsRequest read;
    try {
      read = RlsRequestReader.read(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(
          "protobuf-java accepts " + HexFormat.of().formatHex(bytes) + " but the reader refuses",
          e);
    }
    assertThat(read).isEqualTo(RlsProtoMapper.toRequest(expected));
    assertThat(bytes).as("the reader never modifies the request").isEqualTo(copy);
  }
}
