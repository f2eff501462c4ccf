package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * Coverage-guided: the ext_proc wire reader ({@link Inbound#parse}) agrees with protobuf-java on
 * every byte string — it refuses exactly what protobuf-java refuses, throws nothing else, and every
 * field Sluice reads (the oneof case, each header's value, end_of_stream, protocol_config's body
 * modes, the body bytes and their end_of_stream, the header index's picks) equals what the parsed
 * message says. Seeds: {@code InboundFuzzTestInputs/wireReaderAgreesWithProtobuf/}
 * (docs/testing.md).
 */
class InboundFuzzTest {
  private static final List<String> NAMES =
      List.of(
          ":path",
          ":status",
          "content-type",
          "content-length",
          "x-tenant-id",
          "x-sluice-class",
          "a",
          "é-key",
          "");
  private static final EnvoySignals.HeaderIndex INDEX = new EnvoySignals.HeaderIndex(NAMES);

  @FuzzTest(maxDuration = "2m")
  void wireReaderAgreesWithProtobuf(byte[] bytes) {
    byte[] copy = bytes.clone();
    ProcessingRequest expected;
    try {
      expected = ProcessingRequest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException refused) {
      try {
        Inbound.parse(bytes);
      } catch (InvalidProtocolBufferException alsoRefused) {
        return;
      }
      throw new AssertionError(
          "protobuf-java refuses " + HexFormat.of().formatHex(bytes) + " (" + refused + ")");
    }
    Inbound in;
    try {
      in = Inbound.parse(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(
          "protobuf-java accepts " + HexFormat.of().formatHex(bytes) + " but Inbound refuses", e);
    }
    assertSame(in, expected);
    assertThat(bytes).as("the reader never modifies the frame").isEqualTo(copy);
  }

  static void assertSame(Inbound in, ProcessingRequest expected) {
    assertThat(in.requestCase()).isEqualTo(expected.getRequestCase());
    switch (expected.getRequestCase()) {
      case REQUEST_BODY, RESPONSE_BODY -> {
        HttpBody body =
            expected.hasRequestBody() ? expected.getRequestBody() : expected.getResponseBody();
        assertThat(
                Arrays.copyOfRange(
                    in.bodyArray(), in.bodyOffset(), in.bodyOffset() + in.bodyLength()))
            .isEqualTo(body.getBody().toByteArray());
        assertThat(in.bodyEndOfStream()).isEqualTo(body.getEndOfStream());
      }
      case REQUEST_HEADERS, RESPONSE_HEADERS -> {
        HttpHeaders h =
            expected.hasRequestHeaders()
                ? expected.getRequestHeaders()
                : expected.getResponseHeaders();
        List<HeaderValue> list = h.getHeaders().getHeadersList();
        List<String> names = new ArrayList<>(NAMES);
        list.forEach(v -> names.add(v.getKey()));
        for (String n : names) {
          assertThat(in.header(n)).as(n).isEqualTo(EnvoySignals.find(list, n));
        }
        assertThat(in.headersEndOfStream()).isEqualTo(h.getEndOfStream());
        assertThat(INDEX.pick(in)).containsExactly(INDEX.pick(Inbound.of(expected)));
      }
      default -> {}
    }
    assertThat(in.hasProtocolConfig()).isEqualTo(expected.hasProtocolConfig());
    if (expected.hasProtocolConfig()) {
      assertThat(in.requestBodyMode()).isEqualTo(expected.getProtocolConfig().getRequestBodyMode());
      assertThat(in.responseBodyMode())
          .isEqualTo(expected.getProtocolConfig().getResponseBodyMode());
    }
    assertThat(in.message()).isEqualTo(expected);
  }
}
