package io.sluice.rls;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.grpc.MethodDescriptor;
import io.sluice.rls.config.RateLimitConfig.Entry;
import io.sluice.wire.ProtoReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * Reads a {@code RateLimitRequest} from its wire bytes straight into an {@link RlsRequest}, without
 * the generated message, descriptor and entry objects in between (decision 0004). A request outside
 * the plain shape Envoy writes — a descriptor with a {@code limit} override or its own {@code
 * hits_addend}, a non-ASCII string, a group, an unexpected wire type, malformed or truncated bytes
 * — is parsed by protobuf-java instead, so every request is accepted or refused exactly as before.
 * {@code RlsRequestReaderTest} checks the result against {@link RlsProtoMapper#toRequest} of
 * protobuf-java's parse on generated and damaged requests.
 */
final class RlsRequestReader extends ProtoReader {
  /** What {@link #MARSHALLER} hands over for bytes that do not parse (compared by identity). */
  static final RlsRequest MALFORMED = new RlsRequest("", java.util.List.of(), 0);

  private RlsRequestReader(byte[] bytes) {
    super(bytes);
  }

  /**
   * The request in {@code bytes}.
   *
   * @throws InvalidProtocolBufferException when protobuf-java refuses it
   */
  static RlsRequest read(byte[] bytes) throws InvalidProtocolBufferException {
    RlsRequest r = new RlsRequestReader(bytes).plain();
    return r != null ? r : RlsProtoMapper.toRequest(RateLimitRequest.parseFrom(bytes));
  }

  /** Whether {@code bytes} are read by this reader (true) or by protobuf-java (tests). */
  static boolean readsPlain(byte[] bytes) {
    return new RlsRequestReader(bytes).plain() != null;
  }

  /** The request when it has the plain shape; null otherwise. */
  private @Nullable RlsRequest plain() {
    int end = bytes.length;
    String domain = "";
    long hits = 0;
    Gathered<RlsRequest.Descriptor> descriptors = new Gathered<>();
    while (pos < end) {
      int tag = tag(end);
      if (tag < 0) {
        return null;
      }
      int type = tag & 7;
      switch (tag >>> 3) {
        case RateLimitRequest.DOMAIN_FIELD_NUMBER -> {
          int len = length(type, end);
          if (len < 0 || !ascii(pos, len)) {
            return null;
          }
          domain = known(len);
          pos += len;
        }
        case RateLimitRequest.DESCRIPTORS_FIELD_NUMBER -> {
          int len = length(type, end);
          RlsRequest.Descriptor d = len < 0 ? null : descriptor(pos + len);
          if (d == null) {
            return null;
          }
          descriptors.add(d);
        }
        case RateLimitRequest.HITS_ADDEND_FIELD_NUMBER -> {
          long v = varintValue(type, end);
          if (v == Long.MIN_VALUE) {
            return null;
          }
          hits = Integer.toUnsignedLong((int) v); // uint32, as protobuf-java reads it
        }
        default -> {
          if (!skip(type, end)) {
            return null;
          }
        }
      }
    }
    return new RlsRequest(domain, descriptors.list(), hits);
  }

  private RlsRequest.@Nullable Descriptor descriptor(int end) {
    Gathered<Entry> entries = new Gathered<>();
    while (pos < end) {
      int tag = tag(end);
      if (tag < 0) {
        return null;
      }
      int type = tag & 7;
      int field = tag >>> 3;
      if (field == RateLimitDescriptor.ENTRIES_FIELD_NUMBER) {
        int len = length(type, end);
        Entry e = len < 0 ? null : entry(pos + len);
        if (e == null) {
          return null;
        }
        entries.add(e);
      } else if (field == RateLimitDescriptor.LIMIT_FIELD_NUMBER
          || field == RateLimitDescriptor.HITS_ADDEND_FIELD_NUMBER) {
        return null; // overrides and per-descriptor weights: protobuf-java reads them
      } else if (!skip(type, end)) {
        return null;
      }
    }
    return pos == end
        ? new RlsRequest.Descriptor(entries.list(), Optional.empty(), OptionalLong.empty())
        : null;
  }

  private @Nullable Entry entry(int end) {
    String key = "";
    String value = "";
    while (pos < end) {
      int tag = tag(end);
      if (tag < 0) {
        return null;
      }
      int type = tag & 7;
      int field = tag >>> 3;
      if (field == RateLimitDescriptor.Entry.KEY_FIELD_NUMBER
          || field == RateLimitDescriptor.Entry.VALUE_FIELD_NUMBER) {
        int len = length(type, end);
        if (len < 0 || !ascii(pos, len)) {
          return null; // proto3 strings are checked for UTF-8: protobuf-java does that
        }
        if (field == RateLimitDescriptor.Entry.KEY_FIELD_NUMBER) {
          key = known(len);
        } else {
          value = new String(bytes, pos, len, StandardCharsets.ISO_8859_1); // ASCII: same chars
        }
        pos += len;
      } else if (!skip(type, end)) {
        return null;
      }
    }
    return pos == end ? new Entry(key, value) : null;
  }

  /**
   * Domains and entry keys read recently, by length and first and last byte. They come from Envoy's
   * config, so few and the same call after call: handed out again, they are not allocated and keep
   * the hash the config lookup takes of them. Values (often one per user) are read fresh. Shared
   * without a lock: a String is immutable, and each slot is checked before use.
   */
  private static final @Nullable String[] KNOWN = new String[64];

  /** The ASCII string of the {@code len} bytes at {@code pos} (checked ASCII by the caller). */
  private String known(int len) {
    int slot =
        len == 0 ? 0 : (len * 31 + bytes[pos] * 7 + bytes[pos + len - 1]) & (KNOWN.length - 1);
    String last = KNOWN[slot];
    String s = string(pos, len, last);
    if (s != last) {
      KNOWN[slot] = s;
    }
    return s;
  }

  /**
   * Elements read in order, handed over as an immutable list: up to two (one descriptor, a
   * descriptor's one or two entries: what Envoy sends most) without a growing list to copy.
   */
  private static final class Gathered<T> {
    private @Nullable T first;
    private @Nullable T second;
    private @Nullable List<T> more;

    void add(T t) {
      if (first == null) {
        first = t;
      } else if (second == null) {
        second = t;
      } else {
        if (more == null) {
          more = new ArrayList<>(4);
          more.add(first);
          more.add(second);
        }
        more.add(t);
      }
    }

    List<T> list() {
      if (more != null) {
        return List.copyOf(more);
      }
      if (first == null) {
        return List.of();
      }
      return second == null ? List.of(first) : List.of(first, second);
    }
  }

  /** Reads the request bytes once and hands them to {@link #read}. */
  static final MethodDescriptor.Marshaller<RlsRequest> MARSHALLER =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(RlsRequest value) {
          return new ByteArrayInputStream(RlsProtoMapper.toProto(value).toByteArray());
        }

        /**
         * Never throws: bytes that are not a RateLimitRequest give {@link #MALFORMED}, answered
         * INVALID_ARGUMENT and counted by the adapter (a throw here would end the call UNKNOWN
         * through gRPC's "Application error" path, uncounted, with a SEVERE stack trace).
         */
        @Override
        public RlsRequest parse(InputStream stream) {
          try {
            return read(ProtoReader.readAll(stream));
          } catch (IOException | RuntimeException e) { // InvalidProtocolBufferException included
            return MALFORMED;
          }
        }
      };
}
