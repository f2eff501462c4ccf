package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import org.junit.jupiter.api.Test;

/**
 * {@link UpstreamFailures#header} reads a response header as {@link Inbound#header} does, wire or
 * message, and hands the usual value back itself (no String per response) only when the header is
 * exactly it.
 */
class UsualHeaderTest {
  private static final String OK = "200";
  private static final String JSON = "application/json";

  @Test
  void theUsualValueIsHandedBackItself() throws Exception {
    Inbound h = wire(":status", "200", "content-type", "application/json");
    assertThat(h.fromWire()).isTrue();
    assertThat(UpstreamFailures.header(h, ":status", OK)).isSameAs(OK);
    assertThat(UpstreamFailures.header(h, "content-type", JSON)).isSameAs(JSON);
    assertThat(UpstreamFailures.status(h, false)).isEqualTo(200);
  }

  @Test
  void anyOtherValueReadsAsInboundReadsIt() throws Exception {
    String[][] cases = {
      {":status", "404"},
      {":status", "20"},
      {":status", "2000"},
      {":status", "200 "},
      {"content-type", "text/event-stream"},
      {"content-type", "application/json; charset=utf-8"},
      {"content-type", "application/jsoN"},
      {"content-type", "applicatión/json"},
      {"content-type", ""}
    };
    for (String[] c : cases) {
      Inbound h = wire("x-other", "200", c[0], c[1], c[0], "application/json");
      String usual = c[0].equals(":status") ? OK : JSON;
      String read = UpstreamFailures.header(h, c[0], usual);
      assertThat(read).as("%s: %s", c[0], c[1]).isEqualTo(h.header(c[0])).isEqualTo(c[1]);
      assertThat(read).isNotSameAs(usual);
    }
  }

  @Test
  void anAbsentHeaderIsNullAndAMessageReadsAsBefore() throws Exception {
    Inbound h = wire("x-other", "200");
    assertThat(UpstreamFailures.header(h, ":status", OK)).isNull();
    assertThat(UpstreamFailures.status(h, false)).isZero();
    Inbound message = Inbound.of(request(":status", "503", "content-type", "application/json"));
    assertThat(message.fromWire()).isFalse();
    assertThat(UpstreamFailures.header(message, ":status", OK)).isEqualTo("503");
    assertThat(UpstreamFailures.header(message, "content-type", JSON)).isEqualTo(JSON);
    assertThat(UpstreamFailures.header(message, "x-none", JSON)).isNull();
  }

  @Test
  void theContentTypeAndStatusReadWithTheirOwnKeysAsByName() throws Exception {
    String[][] cases = {
      {":status", "200", "content-type", "application/json"},
      {":status", "503", "content-type", "text/event-stream"},
      {"Content-Type", "application/json", ":status", "200 "},
      {"x-other", "200"},
      {"content-type", "", ":status", ""}
    };
    for (String[] kv : cases) {
      for (Inbound h : new Inbound[] {wire(kv), Inbound.of(request(kv))}) {
        assertThat(UpstreamFailures.contentType(h))
            .as("%s", java.util.Arrays.asList(kv))
            .isEqualTo(UpstreamFailures.header(h, "content-type", JSON))
            .isEqualTo(h.header("content-type"));
        assertThat(UpstreamFailures.status(h, false))
            .isEqualTo((int) EnvoyRequest.parseLong(h.header(":status"), 0));
      }
    }
    assertThat(UpstreamFailures.contentType(wire("content-type", "application/json")))
        .isSameAs(JSON);
  }

  private static Inbound wire(String... kv) throws Exception {
    return Inbound.parse(request(kv).toByteArray());
  }

  private static ProcessingRequest request(String... kv) {
    HeaderMap.Builder m = HeaderMap.newBuilder();
    for (int i = 0; i < kv.length; i += 2) {
      m.addHeaders(
          HeaderValue.newBuilder().setKey(kv[i]).setRawValue(ByteString.copyFromUtf8(kv[i + 1])));
    }
    return ProcessingRequest.newBuilder()
        .setResponseHeaders(HttpHeaders.newBuilder().setHeaders(m))
        .build();
  }
}
