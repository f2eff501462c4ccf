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

  /** The encoded answer for {@code d}. */
  public static RlsAnswer of(RlsDecision.Decided d) {
    List<RlsDecision.Status> statuses = d.statuses();
    int n = statuses.size();
    int[] statusSizes = new int[n];
    int[] limitSizes = new int[n];
    byte[][] names = new byte[n][];
    int size =
        ProtoWriter.varintField(RateLimitResponse.OVERALL_CODE_FIELD_NUMBER, code(d.overall()));
    for (int i = 0; i < n; i++) {
      RlsDecision.Status s = statuses.get(i);
      int st = ProtoWriter.varintField(DescriptorStatus.CODE_FIELD_NUMBER, code(s.code()));
      LimitSpec l = s.currentLimit();
      if (l != null) {
        names[i] = utf8(l.name());
        int lim = 0;
        int rpu = (int) l.requestsPerUnit();
        if (rpu != 0) {
          lim +=
              ProtoWriter.varintField(RateLimit.REQUESTS_PER_UNIT_FIELD_NUMBER, rpu & 0xFFFF_FFFFL);
        }
        int unit = java.util.Objects.requireNonNull(l.unit()).protoNumber(); // limited
        if (unit != 0) {
          lim += ProtoWriter.varintField(RateLimit.UNIT_FIELD_NUMBER, unit);
        }
        if (names[i].length > 0) {
          lim += ProtoWriter.lenField(RateLimit.NAME_FIELD_NUMBER, names[i].length);
        }
        limitSizes[i] = lim;
        st += ProtoWriter.lenField(DescriptorStatus.CURRENT_LIMIT_FIELD_NUMBER, lim);
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
      statusSizes[i] = st;
      size += ProtoWriter.lenField(RateLimitResponse.STATUSES_FIELD_NUMBER, st);
    }
    List<RlsDecision.Header> headers = d.headers();
    byte[][] hk = new byte[headers.size()][];
    byte[][] hv = new byte[headers.size()][];
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
      o.len(RateLimitResponse.STATUSES_FIELD_NUMBER, statusSizes[i]);
      o.tag(DescriptorStatus.CODE_FIELD_NUMBER, ProtoWriter.VARINT);
      o.varint(code(s.code()));
      LimitSpec l = s.currentLimit();
      if (l != null) {
        o.len(DescriptorStatus.CURRENT_LIMIT_FIELD_NUMBER, limitSizes[i]);
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
        if (names[i].length > 0) {
          o.bytes(RateLimit.NAME_FIELD_NUMBER, names[i]);
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
