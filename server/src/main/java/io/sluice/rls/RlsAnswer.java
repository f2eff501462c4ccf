package io.sluice.rls;

import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.grpc.MethodDescriptor;
import io.sluice.rls.config.LimitSpec;
import io.sluice.wire.ProtoWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One {@code RateLimitResponse} as wire bytes, written straight from the decision: exactly the
 * bytes protobuf-java writes for {@link RlsProtoMapper#toResponse} ({@code RlsAnswerTest} checks it
 * byte for byte), without building the message and sizing it again in gRPC's framer.
 */
public final class RlsAnswer {
  private static final int OK = RateLimitResponse.Code.OK_VALUE;
  private static final int OVER_LIMIT = RateLimitResponse.Code.OVER_LIMIT_VALUE;
  private static final int DURATION_SECONDS = com.google.protobuf.Duration.SECONDS_FIELD_NUMBER;

  private final byte[] bytes;

  private RlsAnswer(byte[] bytes) {
    this.bytes = bytes;
  }

  /** The answer as a message (tests and diagnostics). */
  public RateLimitResponse message() {
    try {
      return RateLimitResponse.parseFrom(bytes);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new IllegalStateException("an answer that does not parse: " + e.getMessage(), e);
    }
  }

  byte[] bytes() {
    return bytes;
  }

  private static int code(RlsDecision.Code c) {
    return c == RlsDecision.Code.OK ? OK : OVER_LIMIT;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static final byte[] NO_BYTES = new byte[0];
  private static final byte[][] NO_HEADERS = new byte[0][]; // never written: it has no slot

  /** The encoded answer for {@code d}: sized in one pass, written in a second, no message built. */
  public static RlsAnswer of(RlsDecision.Decided d) {
    List<RlsDecision.Status> statuses = d.statuses();
    int n = statuses.size();
    byte[][] names = null; // a limit's name as UTF-8, only when some limit has one
    for (int i = 0; i < n; i++) {
      LimitSpec l = statuses.get(i).currentLimit();
      if (l != null && !l.name().isEmpty()) {
        if (names == null) {
          names = new byte[n][];
        }
        names[i] = utf8(l.name());
      }
    }
    int size =
        ProtoWriter.varintField(RateLimitResponse.OVERALL_CODE_FIELD_NUMBER, code(d.overall()));
    for (int i = 0; i < n; i++) {
      size +=
          ProtoWriter.lenField(
              RateLimitResponse.STATUSES_FIELD_NUMBER, statusSize(statuses.get(i), name(names, i)));
    }
    List<RlsDecision.Header> headers = d.headers();
    byte[][] hk = headers.isEmpty() ? NO_HEADERS : new byte[headers.size()][];
    byte[][] hv = headers.isEmpty() ? NO_HEADERS : new byte[headers.size()][];
    for (int i = 0; i < headers.size(); i++) {
      hk[i] = utf8(headers.get(i).name());
      hv[i] = utf8(headers.get(i).value());
      size +=
          ProtoWriter.lenField(
              RateLimitResponse.RESPONSE_HEADERS_TO_ADD_FIELD_NUMBER, headerSize(hk[i], hv[i]));
    }

    ProtoWriter o = new ProtoWriter(size);
    o.tag(RateLimitResponse.OVERALL_CODE_FIELD_NUMBER, ProtoWriter.VARINT);
    o.varint(code(d.overall()));
    for (int i = 0; i < n; i++) {
      RlsDecision.Status s = statuses.get(i);
      byte[] name = name(names, i);
      o.len(RateLimitResponse.STATUSES_FIELD_NUMBER, statusSize(s, name));
      o.tag(DescriptorStatus.CODE_FIELD_NUMBER, ProtoWriter.VARINT);
      o.varint(code(s.code()));
      LimitSpec l = s.currentLimit();
      if (l != null) {
        o.len(DescriptorStatus.CURRENT_LIMIT_FIELD_NUMBER, limitSize(l, name));
        int rpu = (int) l.requestsPerUnit();
        if (rpu != 0) {
          o.tag(RateLimit.REQUESTS_PER_UNIT_FIELD_NUMBER, ProtoWriter.VARINT);
          o.varint(rpu);
        }
        int unit = java.util.Objects.requireNonNull(l.unit()).protoNumber(); // limited
        if (unit != 0) {
          o.tag(RateLimit.UNIT_FIELD_NUMBER, ProtoWriter.VARINT);
          o.varint(unit);
        }
        if (name.length > 0) {
          o.bytes(RateLimit.NAME_FIELD_NUMBER, name);
        }
      }
      int remaining = remaining(s);
      if (remaining != 0) {
        o.tag(DescriptorStatus.LIMIT_REMAINING_FIELD_NUMBER, ProtoWriter.VARINT);
        o.varint(remaining);
      }
      if (s.resetSeconds() >= 0) {
        o.len(DescriptorStatus.DURATION_UNTIL_RESET_FIELD_NUMBER, durationSize(s.resetSeconds()));
        if (s.resetSeconds() != 0) {
          o.tag(DURATION_SECONDS, ProtoWriter.VARINT);
          o.varint(s.resetSeconds());
        }
      }
    }
    for (int i = 0; i < headers.size(); i++) {
      o.len(RateLimitResponse.RESPONSE_HEADERS_TO_ADD_FIELD_NUMBER, headerSize(hk[i], hv[i]));
      if (hk[i].length > 0) {
        o.bytes(HeaderValue.KEY_FIELD_NUMBER, hk[i]);
      }
      if (hv[i].length > 0) {
        o.bytes(HeaderValue.VALUE_FIELD_NUMBER, hv[i]);
      }
    }
    return new RlsAnswer(o.done());
  }

  private static byte[] name(byte @Nullable [][] names, int i) {
    byte[] name = names == null ? null : names[i];
    return name == null ? NO_BYTES : name;
  }

  /** Encoded size of one {@code DescriptorStatus}. */
  private static int statusSize(RlsDecision.Status s, byte[] name) {
    int st = ProtoWriter.varintField(DescriptorStatus.CODE_FIELD_NUMBER, code(s.code()));
    LimitSpec l = s.currentLimit();
    if (l != null) {
      st += ProtoWriter.lenField(DescriptorStatus.CURRENT_LIMIT_FIELD_NUMBER, limitSize(l, name));
    }
    int remaining = remaining(s);
    if (remaining != 0) {
      st +=
          ProtoWriter.varintField(
              DescriptorStatus.LIMIT_REMAINING_FIELD_NUMBER, remaining & 0xFFFF_FFFFL);
    }
    if (s.resetSeconds() >= 0) {
      st +=
          ProtoWriter.lenField(
              DescriptorStatus.DURATION_UNTIL_RESET_FIELD_NUMBER, durationSize(s.resetSeconds()));
    }
    return st;
  }

  /** Encoded size of a status's {@code current_limit}. */
  private static int limitSize(LimitSpec l, byte[] name) {
    int lim = 0;
    int rpu = (int) l.requestsPerUnit();
    if (rpu != 0) {
      lim += ProtoWriter.varintField(RateLimit.REQUESTS_PER_UNIT_FIELD_NUMBER, rpu & 0xFFFF_FFFFL);
    }
    int unit = java.util.Objects.requireNonNull(l.unit()).protoNumber(); // limited
    if (unit != 0) {
      lim += ProtoWriter.varintField(RateLimit.UNIT_FIELD_NUMBER, unit);
    }
    if (name.length > 0) {
      lim += ProtoWriter.lenField(RateLimit.NAME_FIELD_NUMBER, name.length);
    }
    return lim;
  }

  /** limit_remaining as protobuf's uint32 holds it (capped at 2^32 − 1, as the mapper does). */
  private static int remaining(RlsDecision.Status s) {
    return (int) Math.min(s.limitRemaining(), 0xFFFF_FFFFL);
  }

  private static int durationSize(long seconds) {
    return seconds == 0 ? 0 : ProtoWriter.varintField(DURATION_SECONDS, seconds);
  }

  private static int headerSize(byte[] k, byte[] v) {
    return (k.length > 0 ? ProtoWriter.lenField(HeaderValue.KEY_FIELD_NUMBER, k.length) : 0)
        + (v.length > 0 ? ProtoWriter.lenField(HeaderValue.VALUE_FIELD_NUMBER, v.length) : 0);
  }

  /** Writes answers' bytes straight into gRPC's frame; parses them back for clients and tests. */
  static final MethodDescriptor.Marshaller<RlsAnswer> MARSHALLER =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(RlsAnswer value) {
          return new io.sluice.wire.EncodedStream(value.bytes);
        }

        @Override
        public RlsAnswer parse(InputStream stream) {
          try {
            return new RlsAnswer(stream.readAllBytes());
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
}
