package io.sluice.extproc;

import static io.sluice.extproc.ExtProcStreamFuzzTest.ADVANCE;
import static io.sluice.extproc.ExtProcStreamFuzzTest.CANCEL;
import static io.sluice.extproc.ExtProcStreamFuzzTest.DAMAGED_FRAME;
import static io.sluice.extproc.ExtProcStreamFuzzTest.EMPTY_FRAME;
import static io.sluice.extproc.ExtProcStreamFuzzTest.HALF_CLOSE;
import static io.sluice.extproc.ExtProcStreamFuzzTest.OPEN;
import static io.sluice.extproc.ExtProcStreamFuzzTest.RAW_FRAME;
import static io.sluice.extproc.ExtProcStreamFuzzTest.REQUEST_BODY;
import static io.sluice.extproc.ExtProcStreamFuzzTest.REQUEST_HEADERS;
import static io.sluice.extproc.ExtProcStreamFuzzTest.REQUEST_TRAILERS;
import static io.sluice.extproc.ExtProcStreamFuzzTest.RESPONSE_BODY;
import static io.sluice.extproc.ExtProcStreamFuzzTest.RESPONSE_HEADERS;
import static io.sluice.extproc.ExtProcStreamFuzzTest.RESPONSE_TRAILERS;
import static io.sluice.extproc.ExtProcStreamFuzzTest.SHUTDOWN;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes the seed corpora of {@link ExtProcStreamFuzzTest} and {@link InboundFuzzTest} (the files
 * under {@code src/test/resources/io/sluice/extproc/*Inputs/}): each seed is a named scenario, so a
 * reader of the corpus knows what it covers. Run from the server module after changing the
 * templates or the program encoding (docs/testing.md):
 *
 * <pre>
 * mvn -B -q -pl server -am test-compile
 * java -cp "server/target/test-classes:server/target/classes:$(cat server/target/test-classpath.txt)" \
 *   io.sluice.extproc.FuzzSeedWriter server/src/test/resources
 * </pre>
 */
public final class FuzzSeedWriter {
  private FuzzSeedWriter() {}

  /** A program for {@link ExtProcStreamFuzzTest.Program}. */
  static final class P {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    P op(int stream, int kind, int... args) {
      out.write(stream << 4 | kind);
      for (int a : args) {
        out.write(a);
      }
      return this;
    }

    /** Advances the fake time by {@code ms} (at most 65535). */
    P advance(int ms) {
      return op(0, ADVANCE, ms >>> 8, ms & 0xff);
    }

    byte[] bytes() {
      return out.toByteArray();
    }
  }

  // request_headers variants (ExtProcStreamFuzzTest.requestHeaders)
  static final int CHAT_BUFFERED = 0x04; // chat, BUFFERED/STREAMED, no content-length
  static final int CHAT_NO_CONFIG = 0x00; // chat, no protocol_config (Envoy < 1.34)
  static final int CHAT_STREAMED = 0x08; // chat, STREAMED/STREAMED
  static final int CHAT_NONE_EOS = 0x1c; // chat, NONE/NONE, end_of_stream
  static final int CHAT_EOS_LENGTH = 0x30; // chat, no config, end_of_stream, content-length 180
  static final int CHAT_TOO_LARGE = 0x44; // chat, BUFFERED, content-length 999999
  static final int UNROUTED = 0x07; // /healthz: unmatched, rejected
  static final int COMPLETIONS_TENANT_HEADER = 0x85; // completions, BUFFERED, x-tenant-id: b

  // request_body variants
  static final int SMALL_CAP_10 = 0x00;
  static final int CAP_300 = 0x01;
  static final int CAP_5000 = 0x02;
  static final int LARGE_BODY = 0x10; // 5000 chars: over maxBodyBytes (4 KiB)
  static final int NOT_JSON = 0x08;
  static final int NOT_LAST_CHUNK = 0x04;

  // response_headers / response_body variants
  static final int OK_JSON = 0x00;
  static final int OK_SSE = 0x04;
  static final int OK_JSON_EOS = 0x08;
  static final int JSON_USAGE = 0x00;
  static final int SSE_CHUNK = 0x01;
  static final int SSE_USAGE_LAST = 0x06;
  static final int JSON_USAGE_LAST = 0x04;

  // stream metadata variants: tenant | class << 2 | pool << 4 | hold << 6
  static final int ANON = 0x00;
  static final int ACME = 0x01;
  static final int TENANT_B = 0x02;
  static final int ACME_HOLD_1S = 0x01 | 2 << 6;
  static final int ACME_NO_HOLD = 0x01 | 1 << 6;
  static final int BOGUS_CLASS = 0x03 << 2;
  static final int CPU_BATCH = 2 << 2 | 2 << 4;
  static final int UNKNOWN_POOL = 3 << 4;

  static Map<String, byte[]> streamSeeds() {
    Map<String, byte[]> s = new LinkedHashMap<>();
    s.put(
        "buffered-admitted-streamed-response-reset",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_300)
            .op(0, RESPONSE_HEADERS, OK_SSE)
            .op(0, RESPONSE_BODY, SSE_CHUNK)
            .op(0, RESPONSE_BODY, SSE_USAGE_LAST)
            .op(0, CANCEL)
            .bytes());
    s.put(
        "json-response-usage-then-half-close",
        new P()
            .op(0, OPEN, ANON)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, SMALL_CAP_10)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .op(0, RESPONSE_BODY, JSON_USAGE_LAST)
            .op(0, HALF_CLOSE)
            .bytes());
    s.put(
        "headers-only-decision-end-of-stream",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_EOS_LENGTH)
            .op(0, RESPONSE_HEADERS, OK_JSON_EOS)
            .op(0, CANCEL)
            .bytes());
    s.put(
        "body-mode-none-released-at-response-headers",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_NONE_EOS)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .advance(50)
            .op(0, CANCEL)
            .bytes());
    s.put(
        "streamed-request-chunks-after-headers-decision",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_STREAMED)
            .op(0, REQUEST_BODY, CAP_300 | NOT_LAST_CHUNK)
            .op(0, REQUEST_BODY, CAP_300)
            .op(0, RESPONSE_HEADERS, OK_SSE)
            .op(0, RESPONSE_BODY, SSE_USAGE_LAST)
            .bytes());
    s.put(
        "no-protocol-config-reset-after-response-headers",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_NO_CONFIG)
            .op(0, REQUEST_BODY, CAP_300)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .op(0, CANCEL)
            .bytes());
    s.put(
        "request-and-response-trailers",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_300 | NOT_LAST_CHUNK)
            .op(0, REQUEST_TRAILERS)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .op(0, RESPONSE_BODY, JSON_USAGE)
            .op(0, RESPONSE_TRAILERS)
            .bytes());
    s.put(
        "queue-hold-then-admitted-when-capacity-frees",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .advance(100)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .op(0, RESPONSE_BODY, JSON_USAGE_LAST)
            .op(1, RESPONSE_HEADERS, OK_JSON_EOS)
            .op(0, CANCEL)
            .op(1, CANCEL)
            .bytes());
    s.put(
        "queue-hold-expires-queue-timeout",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .advance(1500)
            .op(1, CANCEL)
            .op(0, CANCEL)
            .bytes());
    s.put(
        "cancel-while-held",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .op(1, CANCEL)
            .op(0, RESPONSE_HEADERS, OK_JSON_EOS)
            .bytes());
    s.put(
        "half-close-while-held",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .op(1, HALF_CLOSE)
            .advance(10)
            .bytes());
    s.put(
        "message-while-held-is-out-of-phase",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .op(1, RESPONSE_HEADERS, OK_JSON)
            .bytes());
    s.put(
        "shutdown-while-held-and-admitted",
        new P()
            .op(0, OPEN, ACME_HOLD_1S)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_HOLD_1S)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .op(0, SHUTDOWN)
            .op(2, OPEN, ACME)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .bytes());
    s.put(
        "no-hold-allowed-rejects-when-full",
        new P()
            .op(0, OPEN, ACME_NO_HOLD)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(1, OPEN, ACME_NO_HOLD)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .bytes());
    s.put(
        "tenant-concurrency-cap-free-tier",
        new P()
            .op(0, OPEN, TENANT_B)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, SMALL_CAP_10)
            .op(1, OPEN, TENANT_B)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, SMALL_CAP_10)
            .op(2, OPEN, TENANT_B)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(2, REQUEST_BODY, SMALL_CAP_10)
            .op(0, CANCEL)
            .op(1, HALF_CLOSE)
            .bytes());
    s.put(
        "tenant-budget-rpm-and-tokens",
        new P()
            .op(0, OPEN, TENANT_B)
            .op(0, REQUEST_HEADERS, COMPLETIONS_TENANT_HEADER)
            .op(0, REQUEST_BODY, CAP_5000)
            .op(0, CANCEL)
            .op(1, OPEN, TENANT_B)
            .op(1, REQUEST_HEADERS, COMPLETIONS_TENANT_HEADER)
            .op(1, REQUEST_BODY, CAP_5000)
            .op(1, RESPONSE_HEADERS, OK_JSON)
            .op(1, RESPONSE_BODY, JSON_USAGE_LAST)
            .advance(60000)
            .op(2, OPEN, ANON)
            .op(2, REQUEST_HEADERS, COMPLETIONS_TENANT_HEADER)
            .op(2, REQUEST_BODY, SMALL_CAP_10)
            .bytes());
    s.put(
        "rejections-route-class-pool-size",
        new P()
            .op(0, OPEN, ANON)
            .op(0, REQUEST_HEADERS, UNROUTED)
            .op(1, OPEN, BOGUS_CLASS)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, CAP_300)
            .op(2, OPEN, UNKNOWN_POOL)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(2, REQUEST_BODY, CAP_300)
            .op(0, OPEN, CPU_BATCH)
            .op(0, REQUEST_HEADERS, CHAT_TOO_LARGE)
            .op(1, OPEN, ACME)
            .op(1, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(1, REQUEST_BODY, LARGE_BODY)
            .op(2, OPEN, ACME)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(2, REQUEST_BODY, NOT_JSON)
            .bytes());
    s.put(
        "out-of-phase-messages",
        new P()
            .op(0, OPEN, ACME)
            .op(0, RESPONSE_HEADERS, OK_JSON)
            .op(1, OPEN, ACME)
            .op(1, REQUEST_BODY, CAP_300)
            .op(2, OPEN, ACME)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(2, REQUEST_HEADERS, CHAT_BUFFERED)
            .bytes());
    s.put(
        "frames-with-no-message",
        new P()
            .op(0, OPEN, ACME)
            .op(0, EMPTY_FRAME)
            .op(1, OPEN, ACME)
            .op(1, RAW_FRAME, 3, 0x0a, 0x01, 0x00)
            .bytes());
    // found by this fuzz test on the code before issue 13's malformed-frame fix (the stream, and
    // after
    // admission its permit, left behind); INVALID_ARGUMENT through the stream's own close since
    s.put(
        "truncated-response-headers-after-admission-leaks-permit",
        new P()
            .op(0, OPEN, ACME)
            .op(0, REQUEST_HEADERS, CHAT_BUFFERED)
            .op(0, REQUEST_BODY, CAP_300)
            .op(0, DAMAGED_FRAME, 2, OK_JSON, 1, 20)
            .bytes());
    s.put(
        "damaged-request-headers-before-admission-leaks-stream",
        new P()
            .op(0, OPEN, ACME)
            .op(0, DAMAGED_FRAME, 0, CHAT_BUFFERED, 1, 40)
            .op(1, OPEN, ACME)
            .op(1, DAMAGED_FRAME, 0, CHAT_BUFFERED, 0, 3, 0xff)
            .bytes());
    s.put(
        "malformed-raw-frame-leaks-stream",
        new P().op(0, OPEN, ACME).op(0, RAW_FRAME, 2, 0x0a, 0x7f).bytes());
    return s;
  }

  static Map<String, byte[]> inboundSeeds() {
    Map<String, byte[]> s = new LinkedHashMap<>();
    int[] headers = {
      CHAT_BUFFERED,
      CHAT_NO_CONFIG,
      CHAT_STREAMED,
      CHAT_NONE_EOS,
      CHAT_EOS_LENGTH,
      CHAT_TOO_LARGE,
      UNROUTED,
      COMPLETIONS_TENANT_HEADER
    };
    for (int v : headers) {
      s.put(String.format("request-headers-%02x", v), ExtProcStreamFuzzTest.requestHeaders(v));
    }
    for (int v : new int[] {SMALL_CAP_10, CAP_300 | NOT_LAST_CHUNK, NOT_JSON}) {
      s.put(String.format("request-body-%02x", v), ExtProcStreamFuzzTest.requestBody(v));
    }
    for (int v : new int[] {OK_JSON, OK_SSE | 1, OK_JSON_EOS | 3}) {
      s.put(String.format("response-headers-%02x", v), ExtProcStreamFuzzTest.responseHeaders(v));
    }
    for (int v : new int[] {JSON_USAGE, SSE_CHUNK, SSE_USAGE_LAST, 3}) {
      s.put(String.format("response-body-%02x", v), ExtProcStreamFuzzTest.responseBody(v));
    }
    s.put(
        "request-trailers",
        io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.newBuilder()
            .setRequestTrailers(
                io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers.getDefaultInstance())
            .build()
            .toByteArray());
    byte[] a = ExtProcStreamFuzzTest.requestBody(CAP_300);
    byte[] b = ExtProcStreamFuzzTest.requestHeaders(CHAT_BUFFERED);
    byte[] two = new byte[a.length + b.length];
    System.arraycopy(a, 0, two, 0, a.length);
    System.arraycopy(b, 0, two, a.length, b.length);
    s.put("two-oneof-members", two);
    return s;
  }

  private static byte[] rls(String domain, int hits, String... keyValues) {
    io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.Builder b =
        io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
            .setDomain(domain)
            .setHitsAddend(hits);
    io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Builder d =
        io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder();
    for (int i = 0; i + 1 < keyValues.length; i += 2) {
      if (keyValues[i].equals("|")) { // next descriptor
        b.addDescriptors(d);
        d = io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder();
        i--;
        continue;
      }
      d.addEntries(
          io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry.newBuilder()
              .setKey(keyValues[i])
              .setValue(keyValues[i + 1]));
    }
    return b.addDescriptors(d).build().toByteArray();
  }

  /** RlsRequestReaderFuzzTest: requests as Envoy writes them, and the shapes protobuf reads. */
  static Map<String, byte[]> rlsRequests() {
    Map<String, byte[]> s = new LinkedHashMap<>();
    s.put("one-descriptor", rls("envoy", 0, "user", "alice"));
    s.put("nested-and-hits", rls("envoy", 3, "path", "/v1/chat", "method", "POST"));
    s.put("two-descriptors", rls("envoy", 0, "user", "bob", "|", "free", "x"));
    s.put("unicode-value", rls("envoy", 0, "user", "é"));
    s.put(
        "descriptor-hits-and-override",
        io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
            .setDomain("envoy")
            .addDescriptors(
                io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder()
                    .addEntries(
                        io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry
                            .newBuilder()
                            .setKey("user")
                            .setValue("carol"))
                    .setHitsAddend(com.google.protobuf.UInt64Value.of(2))
                    .setLimit(
                        io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                            .RateLimitOverride.newBuilder()
                            .setUnitValue(1)
                            .setRequestsPerUnit(7)))
            .build()
            .toByteArray());
    return s;
  }

  /** RlsServiceFuzzTest programs: 0 = template call, 1 = raw frame, 2 = advance the clock. */
  static Map<String, byte[]> rlsPrograms() {
    Map<String, byte[]> s = new LinkedHashMap<>();
    // template: v (domain bits 0-1, descriptors 2-3, request hits 4-5), per descriptor d and
    // entries
    s.put("user-twice-over-limit", new byte[] {0, 0x04, 0, 0, 0, 0x04, 0, 0, 0, 0x04, 0, 0});
    s.put(
        "window-resets",
        new byte[] {0, 0x04, 0, 0, 0, 0x04, 0, 0, 0, 0x04, 0, 0, 2, 1, 0, 0x04, 0, 0});
    s.put("nested-path-method", new byte[] {0, 0x04, 1, 2, 27, 0, 0x04, 1, 2, 27});
    s.put("unlimited-and-unknown", new byte[] {0, 0x08, 0, 1, 0, 5});
    s.put("tenant-value-match", new byte[] {0, 0x04, 0, 12});
    s.put("empty-domain", new byte[] {0, 0x07, 0, 0});
    s.put("other-domain", new byte[] {0, 0x05, 0, 0});
    s.put("request-hits-addend", new byte[] {0, 0x14, 0, 0, 5});
    s.put("descriptor-hits-addend-zero-checks-only", new byte[] {0, 0x04, 2, 0, 0});
    s.put("limit-override", new byte[] {0, 0x04, 6, 0, 2, 9});
    s.put("long-value", new byte[] {0, 0x04, 0, 48});
    byte[] raw = rls("envoy", 0, "user", "alice");
    byte[] p = new byte[2 + raw.length];
    p[0] = 1;
    p[1] = (byte) raw.length;
    System.arraycopy(raw, 0, p, 2, raw.length);
    s.put("raw-frame", p);
    // found by this fuzz test on the code before issue 13's RLS fix (then UNKNOWN, "Application
    // error processing RPC"); INVALID_ARGUMENT since
    s.put("descriptor-hits-addend-2-pow-63", new byte[] {0, 0x04, 4, 0, 0});
    s.put("malformed-request", new byte[] {1, 2, 0x0a, 0x7f});
    return s;
  }

  public static void main(String[] args) throws IOException {
    Path root = Path.of(args.length > 0 ? args[0] : "src/test/resources");
    write(
        root.resolve("io/sluice/rls/RlsRequestReaderFuzzTestInputs/readerAgreesWithProtobuf"),
        rlsRequests());
    write(root.resolve("io/sluice/rls/RlsServiceFuzzTestInputs/shouldRateLimit"), rlsPrograms());
    write(
        root.resolve("io/sluice/extproc/ExtProcStreamFuzzTestInputs/wholeStreams"), streamSeeds());
    write(
        root.resolve("io/sluice/extproc/InboundFuzzTestInputs/wireReaderAgreesWithProtobuf"),
        inboundSeeds());
  }

  private static void write(Path dir, Map<String, byte[]> seeds) throws IOException {
    Files.createDirectories(dir);
    for (Map.Entry<String, byte[]> e : seeds.entrySet()) {
      Files.write(dir.resolve(e.getKey()), e.getValue());
    }
  }
}
