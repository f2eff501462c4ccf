package io.sluice.extproc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.statistics.Statistics;
import org.junit.jupiter.api.Test;

/**
 * The wire reader (request and response headers, request and response bodies) answers exactly what
 * protobuf-java's parser answers.
 */
class InboundTest {
  private static final List<String> NAMES =
      List.of(":path", "x-tenant-id", "content-length", "x-sluice-class", "a", "é-key", "");

  @Property(tries = 500)
  void answersEqualProtobufs(@ForAll("requests") ProcessingRequest req) throws Exception {
    byte[] bytes = req.toByteArray();
    Inbound in = Inbound.parse(bytes);
    Statistics.label("reader").collect(in.fromWire() ? "wire" : "protobuf");
    assertSame(in, ProcessingRequest.parseFrom(bytes));
    // most generated messages are plain: the wire reader is what is under test
    Statistics.label("reader").coverage(c -> c.check("wire").percentage(p -> p > 40));
    Statistics.label("case").collect(in.requestCase());
    Statistics.label("case")
        .coverage(
            c -> {
              c.check(ProcessingRequest.RequestCase.REQUEST_BODY).count(n -> n > 0);
              c.check(ProcessingRequest.RequestCase.RESPONSE_BODY).count(n -> n > 0);
              c.check(ProcessingRequest.RequestCase.RESPONSE_HEADERS).count(n -> n > 0);
            });
  }

  @Property(tries = 300)
  void twoMessagesConcatenatedMergeAsInProtobuf(
      @ForAll("requests") ProcessingRequest a, @ForAll("requests") ProcessingRequest b)
      throws Exception {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    a.writeTo(o);
    b.writeTo(o);
    byte[] bytes = o.toByteArray();
    assertSame(Inbound.parse(bytes), ProcessingRequest.parseFrom(bytes));
  }

  /** Flipped bytes, truncation and trailing garbage: refused exactly when protobuf refuses. */
  @Property(tries = 2000)
  void damagedBytesAreRefusedOrReadAsProtobufDoes(
      @ForAll("requests") ProcessingRequest req,
      @ForAll @IntRange(min = 0, max = 10_000) int where,
      @ForAll @IntRange(min = 0, max = 255) int value,
      @ForAll @IntRange(min = 0, max = 2) int how)
      throws Exception {
    byte[] bytes = req.toByteArray();
    if (bytes.length == 0) {
      return;
    }
    int at = where % bytes.length;
    byte[] damaged =
        switch (how) {
          case 0 -> {
            byte[] c = bytes.clone();
            c[at] = (byte) value;
            yield c;
          }
          case 1 -> java.util.Arrays.copyOf(bytes, at);
          default -> {
            byte[] c = java.util.Arrays.copyOf(bytes, bytes.length + 2);
            c[bytes.length] = (byte) value;
            c[bytes.length + 1] = (byte) at;
            yield c;
          }
        };
    ProcessingRequest expected;
    try {
      expected = ProcessingRequest.parseFrom(damaged);
    } catch (InvalidProtocolBufferException e) {
      Statistics.collect("refused");
      try {
        Inbound.parse(damaged);
      } catch (InvalidProtocolBufferException alsoRefused) {
        return;
      }
      throw new AssertionError(
          "protobuf refused " + java.util.HexFormat.of().formatHex(damaged) + ": " + e);
    }
    Inbound in = Inbound.parse(damaged);
    Statistics.collect(in.fromWire() ? "read from wire" : "parsed");
    assertSame(in, expected);
  }

  @Test
  void envoysPlainRequestHeadersAreReadFromTheWire() throws Exception {
    ProcessingRequest req =
        ProcessingRequest.newBuilder()
            .setRequestHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(raw(":path", "/v1/chat/completions"))
                            .addHeaders(raw("x-tenant-id", "acme"))
                            .addHeaders(
                                HeaderValue.newBuilder().setKey("x-old").setValue("string-field")))
                    .setEndOfStream(true))
            .setProtocolConfig(
                ProtocolConfiguration.newBuilder().setRequestBodyModeValue(1).build())
            .build();
    Inbound in = Inbound.parse(req.toByteArray());
    assertThat(in.fromWire()).isTrue();
    assertThat(in.header("x-tenant-id")).isEqualTo("acme");
    assertThat(in.header("x-old")).isEqualTo("string-field");
    assertThat(in.header("x-missing")).isNull();
    assertThat(in.headersEndOfStream()).isTrue();
    assertThat(in.requestBodyMode().getNumber()).isEqualTo(1);
    assertThat(in.message()).isEqualTo(req);
  }

  @Test
  void bodiesAreReadInPlace() throws Exception {
    ProcessingRequest body =
        ProcessingRequest.newBuilder()
            .setRequestBody(
                HttpBody.newBuilder()
                    .setBody(ByteString.copyFromUtf8("{\"a\":1}"))
                    .setEndOfStream(true))
            .build();
    byte[] bytes = body.toByteArray();
    Inbound in = Inbound.parse(bytes);
    assertThat(in.fromWire()).isTrue();
    assertThat(in.bodyArray()).isSameAs(bytes); // no copy
    assertThat(new String(in.bodyArray(), in.bodyOffset(), in.bodyLength(), UTF_8))
        .isEqualTo("{\"a\":1}");
    assertThat(in.bodyEndOfStream()).isTrue();

    ProcessingRequest empty =
        ProcessingRequest.newBuilder().setResponseBody(HttpBody.getDefaultInstance()).build();
    Inbound e = Inbound.parse(empty.toByteArray());
    assertThat(e.requestCase()).isEqualTo(ProcessingRequest.RequestCase.RESPONSE_BODY);
    assertThat(e.bodyLength()).isZero();
    assertThat(e.bodyEndOfStream()).isFalse();
  }

  @Test
  void responseHeadersAreReadFromTheWire() throws Exception {
    ProcessingRequest resp =
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(raw(":status", "200"))
                            .addHeaders(raw("content-type", "text/event-stream")))
                    .setEndOfStream(false))
            .build();
    Inbound in = Inbound.parse(resp.toByteArray());
    assertThat(in.fromWire()).isTrue();
    assertThat(in.requestCase()).isEqualTo(ProcessingRequest.RequestCase.RESPONSE_HEADERS);
    assertThat(in.header(":status")).isEqualTo("200");
    assertThat(in.header("content-type")).isEqualTo("text/event-stream");
    assertThat(in.headersEndOfStream()).isFalse();
  }

  @Test
  void trailersTwoMembersAndNonAsciiStringsGoToProtobuf() throws Exception {
    ProcessingRequest trailers =
        ProcessingRequest.newBuilder()
            .setResponseTrailers(
                io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers.getDefaultInstance())
            .build();
    assertThat(Inbound.parse(trailers.toByteArray()).fromWire()).isFalse();
    ProcessingRequest a =
        ProcessingRequest.newBuilder()
            .setRequestBody(HttpBody.newBuilder().setBody(ByteString.copyFromUtf8("x")))
            .build();
    ProcessingRequest b = headers(List.of(raw("k", "v")));
    ByteArrayOutputStream two = new ByteArrayOutputStream();
    a.writeTo(two);
    b.writeTo(two); // two oneof members: the last one wins, as protobuf-java decides
    Inbound merged = Inbound.parse(two.toByteArray());
    assertThat(merged.fromWire()).isFalse();
    assertThat(merged.requestCase()).isEqualTo(ProcessingRequest.RequestCase.REQUEST_HEADERS);
    assertThat(merged.header("k")).isEqualTo("v");
    ProcessingRequest utf8 = headers(List.of(HeaderValue.newBuilder().setKey("é").build()));
    Inbound in = Inbound.parse(utf8.toByteArray());
    assertThat(in.fromWire()).isFalse();
    assertThat(in.header("é")).isEqualTo("");
  }

  private static void assertSame(Inbound in, ProcessingRequest expected) {
    assertThat(in.requestCase()).isEqualTo(expected.getRequestCase());
    assertThat(in.message()).isEqualTo(expected);
    switch (expected.getRequestCase()) {
      case REQUEST_BODY, RESPONSE_BODY -> {
        HttpBody body =
            expected.hasRequestBody() ? expected.getRequestBody() : expected.getResponseBody();
        assertThat(
                java.util.Arrays.copyOfRange(
                    in.bodyArray(), in.bodyOffset(), in.bodyOffset() + in.bodyLength()))
            .isEqualTo(body.getBody().toByteArray());
        assertThat(in.bodyEndOfStream()).isEqualTo(body.getEndOfStream());
        return;
      }
      case RESPONSE_HEADERS -> {
        List<HeaderValue> list = expected.getResponseHeaders().getHeaders().getHeadersList();
        List<String> names = new ArrayList<>(NAMES);
        list.forEach(h -> names.add(h.getKey()));
        for (String n : names) {
          assertThat(in.header(n)).as(n).isEqualTo(EnvoySignals.find(list, n));
        }
        assertThat(in.headersEndOfStream())
            .isEqualTo(expected.getResponseHeaders().getEndOfStream());
        return;
      }
      case REQUEST_HEADERS -> {}
      default -> {
        return;
      }
    }
    List<HeaderValue> list = expected.getRequestHeaders().getHeaders().getHeadersList();
    List<String> names = new ArrayList<>(NAMES);
    list.forEach(h -> names.add(h.getKey()));
    for (String n : names) {
      assertThat(in.header(n)).as(n).isEqualTo(EnvoySignals.find(list, n));
    }
    EnvoySignals.HeaderIndex index = new EnvoySignals.HeaderIndex(NAMES);
    assertThat(index.pick(in)).containsExactly(index.pick(Inbound.of(expected)));
    assertThat(in.headersEndOfStream()).isEqualTo(expected.getRequestHeaders().getEndOfStream());
    assertThat(in.hasProtocolConfig()).isEqualTo(expected.hasProtocolConfig());
    assertThat(in.requestBodyMode()).isEqualTo(expected.getProtocolConfig().getRequestBodyMode());
    assertThat(in.responseBodyMode()).isEqualTo(expected.getProtocolConfig().getResponseBodyMode());
  }

  @Provide
  Arbitrary<ProcessingRequest> requests() {
    Arbitrary<HeaderValue> header =
        Combinators.combine(
                Arbitraries.of(NAMES),
                Arbitraries.strings().ofMaxLength(5),
                Arbitraries.strings().withChars("aé\u0000-").ofMaxLength(4),
                Arbitraries.integers().between(0, 4))
            .as(
                (k, v, r, shape) -> {
                  HeaderValue.Builder b = HeaderValue.newBuilder();
                  if (shape != 4) {
                    b.setKey(k);
                  }
                  if (shape == 0 || shape == 2) {
                    b.setValue(v);
                  }
                  if (shape == 1 || shape == 2) {
                    b.setRawValue(ByteString.copyFromUtf8(r));
                  }
                  if (shape == 3) {
                    b.setUnknownFields(
                        UnknownFieldSet.newBuilder()
                            .addField(9, UnknownFieldSet.Field.newBuilder().addVarint(7).build())
                            .build());
                  }
                  return b.build();
                });
    return Combinators.combine(
            header.list().ofMaxSize(8),
            Arbitraries.of(true, false),
            Arbitraries.integers().between(-1, 4),
            Arbitraries.integers().between(-1, 4),
            Arbitraries.integers().between(0, 7),
            Arbitraries.bytes().array(byte[].class).ofMaxSize(12))
        .as(
            (headers, eos, reqMode, respMode, extra, bodyBytes) -> {
              ProcessingRequest.Builder b = headers(headers).toBuilder();
              b.getRequestHeadersBuilder().setEndOfStream(eos);
              if (reqMode >= 0 || respMode >= 0) {
                ProtocolConfiguration.Builder pc = ProtocolConfiguration.newBuilder();
                if (reqMode >= 0) {
                  pc.setRequestBodyModeValue(reqMode);
                }
                if (respMode >= 0) {
                  pc.setResponseBodyModeValue(respMode);
                }
                b.setProtocolConfig(pc);
              }
              switch (extra) {
                case 1 ->
                    b.setMetadataContext(
                            Metadata.newBuilder()
                                .putFilterMetadata(
                                    "ns",
                                    Struct.newBuilder()
                                        .putFields(
                                            "k", Value.newBuilder().setStringValue("v").build())
                                        .build()))
                        .setObservabilityMode(true);
                case 2 ->
                    b.putAttributes(
                        EnvoySignals.ATTRIBUTES_KEY,
                        Struct.newBuilder()
                            .putFields("x", Value.newBuilder().setNumberValue(2).build())
                            .build());
                case 3 ->
                    b.setRequestBody(HttpBody.newBuilder().setBody(ByteString.copyFromUtf8("x")));
                case 4 ->
                    b.setRequestBody( // replaces request_headers (oneof): a body message
                        HttpBody.newBuilder()
                            .setBody(ByteString.copyFrom(bodyBytes))
                            .setEndOfStream(eos));
                case 5 ->
                    b.setResponseBody(
                        HttpBody.newBuilder()
                            .setBody(ByteString.copyFrom(bodyBytes))
                            .setEndOfStream(!eos));
                case 6 ->
                    b.setResponseHeaders(
                        HttpHeaders.newBuilder()
                            .setHeaders(HeaderMap.newBuilder().addAllHeaders(headers))
                            .setEndOfStream(eos));
                case 7 ->
                    b.setResponseBody(
                        HttpBody.newBuilder()
                            .setUnknownFields(
                                UnknownFieldSet.newBuilder()
                                    .addField(
                                        7, UnknownFieldSet.Field.newBuilder().addVarint(1).build())
                                    .build()));
                default -> {}
              }
              return b.build();
            });
  }

  private static HeaderValue raw(String k, String v) {
    return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
  }

  private static ProcessingRequest headers(List<HeaderValue> headers) {
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(
            HttpHeaders.newBuilder().setHeaders(HeaderMap.newBuilder().addAllHeaders(headers)))
        .build();
  }
}
