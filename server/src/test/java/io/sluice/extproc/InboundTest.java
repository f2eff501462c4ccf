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
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The wire reader (request and response headers, request and response bodies) answers exactly what
 * protobuf-java's parser answers.
 */
class InboundTest {
  private static final List<String> NAMES =
      List.of(":path", "x-tenant-id", "content-length", "x-sluice-class", "a", "é-key", "");

  @Test
  void answersEqualProtobufs() {
    int tries = 500;
    AtomicInteger wire = new AtomicInteger();
    Map<ProcessingRequest.RequestCase, Integer> cases =
        new EnumMap<>(ProcessingRequest.RequestCase.class);
    Seeded.forAll(
        0x5EED_0E01L,
        tries,
        InboundTest::request,
        req -> {
          byte[] bytes = req.toByteArray();
          Inbound in = Inbound.parse(bytes);
          if (in.fromWire()) {
            wire.incrementAndGet();
          }
          cases.merge(in.requestCase(), 1, Integer::sum);
          assertSame(in, ProcessingRequest.parseFrom(bytes));
        });
    // most generated messages are plain: the wire reader is what is under test
    assertThat(100.0 * wire.get() / tries).as("%% read from the wire").isGreaterThan(40);
    assertThat(cases)
        .containsKeys(
            ProcessingRequest.RequestCase.REQUEST_BODY,
            ProcessingRequest.RequestCase.RESPONSE_BODY,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS);
  }

  record Two(ProcessingRequest a, ProcessingRequest b) {}

  @Test
  void twoMessagesConcatenatedMergeAsInProtobuf() {
    Seeded.forAll(
        0x5EED_0E02L,
        300,
        g -> new Two(request(g), request(g)),
        t -> {
          ByteArrayOutputStream o = new ByteArrayOutputStream();
          t.a().writeTo(o);
          t.b().writeTo(o);
          byte[] bytes = o.toByteArray();
          assertSame(Inbound.parse(bytes), ProcessingRequest.parseFrom(bytes));
        });
  }

  record Damage(ProcessingRequest req, int where, int value, int how) {}

  /** Flipped bytes, truncation and trailing garbage: refused exactly when protobuf refuses. */
  @Test
  void damagedBytesAreRefusedOrReadAsProtobufDoes() {
    Seeded.forAll(
        0x5EED_0E03L,
        2000,
        g ->
            new Damage(
                request(g), g.intBetween(0, 10_000), g.intBetween(0, 255), g.intBetween(0, 2)),
        c -> damagedBytesAreRefusedOrReadAsProtobufDoes(c.req(), c.where(), c.value(), c.how()));
  }

  private static void damagedBytesAreRefusedOrReadAsProtobufDoes(
      ProcessingRequest req, int where, int value, int how) throws Exception {
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
      try {
        Inbound.parse(damaged);
      } catch (InvalidProtocolBufferException alsoRefused) {
        return;
      }
      throw new AssertionError(
          "protobuf refused " + java.util.HexFormat.of().formatHex(damaged) + ": " + e);
    }
    assertSame(Inbound.parse(damaged), expected);
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
  void attributesAndMetadata_seenOnTheWire_readOnlyWhenSent() throws Exception {
    ProcessingRequest plain =
        ProcessingRequest.newBuilder()
            .setRequestHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(
                                HeaderValue.newBuilder()
                                    .setKey(":path")
                                    .setRawValue(ByteString.copyFromUtf8("/v1/chat")))))
            .build();
    ProcessingRequest withAttribute =
        plain.toBuilder()
            .putAttributes(
                "envoy.filters.http.ext_proc",
                com.google.protobuf.Struct.newBuilder()
                    .putFields(
                        "source.address",
                        com.google.protobuf.Value.newBuilder()
                            .setStringValue("10.1.2.3:5555")
                            .build())
                    .build())
            .build();

    Inbound none = Inbound.parse(plain.toByteArray());
    Inbound some = Inbound.parse(withAttribute.toByteArray());

    assertThat(none.fromWire()).isTrue();
    assertThat(none.hasContext()).isFalse();
    assertThat(
            new EnvoySignals(new io.grpc.Metadata(), none, null, new InitialMetadata())
                .attribute("source.address"))
        .isNull();
    assertThat(some.fromWire()).isTrue();
    assertThat(some.hasContext()).isTrue();
    assertThat(
            new EnvoySignals(new io.grpc.Metadata(), some, null, new InitialMetadata())
                .attribute("source.address"))
        .isEqualTo("10.1.2.3:5555");
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
    if (expected.hasMetadataContext() || expected.getAttributesCount() > 0) {
      assertThat(in.hasContext()).isTrue(); // false would hide them from a signal read
    }
    assertThat(in.requestBodyMode()).isEqualTo(expected.getProtocolConfig().getRequestBodyMode());
    assertThat(in.responseBodyMode()).isEqualTo(expected.getProtocolConfig().getResponseBodyMode());
  }

  /**
   * One header: a name from NAMES, a string value (any text, or ASCII) and/or a raw value, or an
   * unknown field.
   */
  private static HeaderValue header(Gen g) {
    String k = g.oneOf(NAMES);
    // any text, or ASCII half the time: the wire reader reads only ASCII strings itself, so the
    // choice between value and raw_value is exercised on messages it reads
    String v = g.bool() ? g.anyString(5) : g.string("ab-_ 09", 0, 5);
    String r = g.string("aé\u0000-", 0, 4);
    int shape = g.intBetween(0, 4);
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
  }

  /**
   * Requests: request headers (end of stream, protocol config or not) with, by {@code extra},
   * metadata, attributes, or in place of them a request body, response body or response headers.
   */
  static ProcessingRequest request(Gen g) {
    List<HeaderValue> headers = g.list(0, 8, () -> header(g));
    boolean eos = g.bool();
    int reqMode = g.intBetween(-1, 4);
    int respMode = g.intBetween(-1, 4);
    int extra = g.intBetween(0, 7);
    byte[] bodyBytes = g.bytes(12);
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
                              .putFields("k", Value.newBuilder().setStringValue("v").build())
                              .build()))
              .setObservabilityMode(true);
      case 2 ->
          b.putAttributes(
              EnvoySignals.ATTRIBUTES_KEY,
              Struct.newBuilder()
                  .putFields("x", Value.newBuilder().setNumberValue(2).build())
                  .build());
      case 3 -> b.setRequestBody(HttpBody.newBuilder().setBody(ByteString.copyFromUtf8("x")));
      case 4 ->
          b.setRequestBody( // replaces request_headers (oneof): a body message
              HttpBody.newBuilder().setBody(ByteString.copyFrom(bodyBytes)).setEndOfStream(eos));
      case 5 ->
          b.setResponseBody(
              HttpBody.newBuilder().setBody(ByteString.copyFrom(bodyBytes)).setEndOfStream(!eos));
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
                          .addField(7, UnknownFieldSet.Field.newBuilder().addVarint(1).build())
                          .build()));
      default -> {}
    }
    return b.build();
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
