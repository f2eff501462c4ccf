package io.sluice.extproc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The wire reader keeps only where a header's key and value begin and reads each length back from
 * the varint before it: keys and values of every length (one- and two-byte lengths), over-long
 * varints, repeated and absent fields answer what protobuf-java's parser answers. And the gRPC
 * content-type test answers what {@code regionMatches} ignoring case answers.
 */
class InboundSpansTest {
  private static final String LONG_KEY = "x-" + "k".repeat(140); // a two-byte length
  private static final List<String> NAMES =
      List.of(":path", "x-tenant-id", "a", "", "x-" + "k".repeat(125), LONG_KEY, "x-tenant-iD");

  /** One HeaderValue's fields as written: field number and content, in order (repeats allowed). */
  record Field(int number, byte[] content, int keyPad, int lengthPad) {
    @Override
    public String toString() { // the content as text: a failure shows the message
      return number + "=" + new String(content, UTF_8) + "/" + keyPad + "/" + lengthPad;
    }
  }

  @Test
  void longShortOverlongRepeatedAndAbsent_keysAndValuesReadAsProtobufReadsThem() throws Exception {
    int tries = 600;
    int[] wire = new int[1];
    Seeded.forAll(
        0x5EED_0330L,
        tries,
        InboundSpansTest::headers,
        headers -> {
          byte[] bytes = message(headers);
          ProcessingRequest expected = ProcessingRequest.parseFrom(bytes);
          Inbound in = Inbound.parse(bytes);
          if (in.fromWire()) {
            wire[0]++;
          }
          List<HeaderValue> list = expected.getRequestHeaders().getHeaders().getHeadersList();
          List<String> names = new ArrayList<>(NAMES);
          list.forEach(h -> names.add(h.getKey()));
          for (String n : names) {
            assertThat(in.header(n)).as(n).isEqualTo(EnvoySignals.find(list, n));
          }
          EnvoySignals.HeaderIndex index = new EnvoySignals.HeaderIndex(names);
          assertThat(index.pick(in)).containsExactly(index.pick(Inbound.of(expected)));
        });
    assertThat(wire[0]).as("read from the wire").isGreaterThan(tries * 9 / 10);
  }

  private static List<List<Field>> headers(Gen g) {
    return g.list(
        0,
        12,
        () ->
            g.list(
                0,
                4,
                () -> {
                  int number = g.intBetween(1, 3);
                  byte[] content =
                      number == 1
                          ? g.oneOf(NAMES).getBytes(UTF_8)
                          : g.string("ab-/ 09", 0, g.bool() ? 4 : 300).getBytes(UTF_8);
                  return new Field(number, content, g.intBetween(0, 2), g.intBetween(0, 2));
                }));
  }

  /** A request_headers message whose HeaderValues are written field by field, as given. */
  private static byte[] message(List<List<Field>> headers) {
    ByteArrayOutputStream map = new ByteArrayOutputStream();
    for (List<Field> h : headers) {
      ByteArrayOutputStream value = new ByteArrayOutputStream();
      for (Field f : h) {
        varint(value, (f.number() << 3) | 2, f.keyPad());
        varint(value, f.content().length, f.lengthPad());
        value.writeBytes(f.content());
      }
      field(map, HeaderMap.HEADERS_FIELD_NUMBER, value.toByteArray());
    }
    ByteArrayOutputStream http = new ByteArrayOutputStream();
    field(http, HttpHeaders.HEADERS_FIELD_NUMBER, map.toByteArray());
    ByteArrayOutputStream req = new ByteArrayOutputStream();
    field(req, ProcessingRequest.REQUEST_HEADERS_FIELD_NUMBER, http.toByteArray());
    return req.toByteArray();
  }

  private static void field(ByteArrayOutputStream out, int number, byte[] content) {
    varint(out, (number << 3) | 2, 0);
    varint(out, content.length, 0);
    out.writeBytes(content);
  }

  /** A varint, with {@code pad} extra bytes of zeros (over-long, as protobuf-java accepts). */
  private static void varint(ByteArrayOutputStream out, int v, int pad) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int x = v;
    while (x >= 0x80) {
      b.write((x & 0x7F) | 0x80);
      x >>>= 7;
    }
    b.write(x);
    byte[] bytes = b.toByteArray();
    if (pad > 0) {
      bytes[bytes.length - 1] |= (byte) 0x80;
      out.writeBytes(bytes);
      for (int i = 1; i < pad; i++) {
        out.write(0x80);
      }
      out.write(0);
    } else {
      out.writeBytes(bytes);
    }
  }

  /**
   * A request's header places are kept a byte each up to 255 headers, an int each beyond: every
   * indexed name at any place, around 255 and 256 headers, answers as a scan of the list does.
   */
  @Test
  void indexedHeaders_atEveryPlaceAroundTheByteBound_answerAsTheListDoes() throws Exception {
    List<String> indexed = List.of(":path", "x-tenant-id", "content-type", "x-a", "x-b");
    EnvoySignals.HeaderIndex index = new EnvoySignals.HeaderIndex(indexed);
    List<int[]> cases = new ArrayList<>(List.of(new int[] {256, 255}, new int[] {255, 254}));
    Seeded.forAll(
        0x5EED_0332L,
        300,
        g -> {
          int count = g.bool() ? g.intBetween(250, 260) : g.intBetween(0, 300);
          return new int[] {count, g.intBetween(0, Math.max(0, count - 1))};
        },
        c -> cases.add(c));
    for (int[] c : cases) {
      int count = c[0];
      HeaderMap.Builder map = HeaderMap.newBuilder();
      for (int i = 0; i < count; i++) {
        // filler names; an indexed one first at the chosen place, then others (and it again)
        String k =
            i == c[1] || (i > c[1] && i % 97 == 5) ? indexed.get(i % indexed.size()) : "x-f" + i;
        map.addHeaders(HeaderValue.newBuilder().setKey(k).setValue("v" + i));
      }
      ProcessingRequest req =
          ProcessingRequest.newBuilder()
              .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(map))
              .build();
      for (Inbound in : List.of(Inbound.parse(req.toByteArray()), Inbound.of(req))) {
        EnvoySignals signals =
            new EnvoySignals(new io.grpc.Metadata(), in, index, new InitialMetadata());
        for (String n : indexed) {
          assertThat(signals.header(n))
              .as("%s in %d headers (placed at %d)", n, count, c[1])
              .isEqualTo(EnvoySignals.find(map.getHeadersList(), n));
        }
      }
    }
  }

  @Test
  void grpcContentType_answersAsRegionMatchesIgnoringCase() {
    for (String s :
        List.of(
            "application/grpc",
            "APPLICATION/GRPC+proto",
            "application/Grpc-web",
            "application/json",
            "application/grp",
            "applıcation/grpc", // dotless i: its upper case is I
            "application/\u0120rpc",
            "")) {
      assertThat(EnvoyRequest.grpcContentType(s))
          .as(s)
          .isEqualTo(s.regionMatches(true, 0, "application/grpc", 0, 16));
    }
    Seeded.forAll(
        0x5EED_0331L,
        3000,
        g -> {
          StringBuilder b = new StringBuilder();
          String base = g.bool() ? "application/grpc" : "application/json+x";
          for (char c : base.toCharArray()) {
            int how = g.intBetween(0, 9);
            char odd = g.oneOf('ı', 'İ', 'K', 'ſ', 'G', 'g', 'ǵ', (char) 0x80);
            char any = (char) g.intBetween(0, 0x17F);
            b.append(how == 0 ? Character.toUpperCase(c) : how == 1 ? odd : how == 2 ? any : c);
          }
          String s = b.substring(0, g.intBetween(0, b.length()));
          return g.bool() ? s : s.toUpperCase(Locale.ROOT);
        },
        s ->
            assertThat(EnvoyRequest.grpcContentType(s))
                .as(s)
                .isEqualTo(s.regionMatches(true, 0, "application/grpc", 0, 16)));
  }
}
