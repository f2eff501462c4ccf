package io.sluice.extproc;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.sluice.wire.ProtoReader;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One {@code ProcessingRequest} as Envoy sent it.
 *
 * <p>The messages of an LLM request's stream — {@code request_headers} (the first of every stream,
 * and the one most requests are decided on), {@code request_body}, {@code response_headers} and
 * {@code response_body} — are read straight from their wire bytes. One pass checks the message and
 * notes where each header's key and value, or the body, lie. Only the header values a request is
 * asked for become Strings (the generated parser builds a HeaderValue and two Strings per header,
 * which cost Sluice about as much CPU as deciding the request), and a body is read in place, never
 * copied (the estimator and the usage reader take the array, offset and length). Trailers, and any
 * message outside the plain shape Envoy writes (two different oneof members, a group, a field with
 * an unexpected wire type, a non-ASCII string field, a malformed or truncated field), are parsed by
 * protobuf-java at once, so every message is accepted or refused exactly as protobuf-java does.
 * {@code metadata_context} and {@code attributes} are checked by protobuf-java but interpreted only
 * when a signal reads them and the message has them ({@link #hasContext}): the first such read
 * parses the whole message ({@link #message}). {@code InboundTest} checks every answer of the wire
 * reader against protobuf-java on generated messages, malformed input included.
 */
final class Inbound extends ProtoReader {
  private @Nullable ProcessingRequest message; // parsed at once (fallback) or on demand
  private @Nullable RequestCase requestCase; // null only in a malformed frame
  private boolean wire; // read from the wire (false: the message is used)
  // request_headers or response_headers read from the wire; -1 for other messages
  private int headerCount = -1;

  // per header: where its key and its value (raw_value if set, else value) begin, -1 when empty;
  // a length is the varint just before its content (ProtoReader.lengthBefore), not stored
  @SuppressWarnings("NullAway.Init")
  private int[] spans;

  private boolean endOfStream;
  private boolean hasProtocolConfig;
  private @Nullable ProcessingRequest context; // metadata_context, attributes: as the pass parsed
  private int requestBodyMode;
  private int responseBodyMode;

  @SuppressWarnings("NullAway.Init") // the body: wire bytes, or a copy (set by ensureBody())
  private byte[] bodyArray;

  private int bodyOffset;
  private int bodyLength = -1;
  private boolean bodyEndOfStream;
  private @Nullable String malformed; // a frame that did not parse: why (no stack trace)

  // bytes are null in a reader of a parsed message: only the wire pass reads them (NullAway)
  @SuppressWarnings("NullAway")
  private Inbound(byte @Nullable [] bytes, @Nullable ProcessingRequest message) {
    super(bytes);
    this.message = message;
    this.requestCase = message == null ? null : message.getRequestCase();
  }

  /** A frame protobuf-java refuses: carries only the reason (its accessors are not used). */
  static Inbound malformed(byte @Nullable [] bytes, @Nullable String why) {
    Inbound in = new Inbound(bytes, null);
    in.malformed = why == null ? "malformed frame" : why;
    return in;
  }

  @Nullable String malformedCause() { // why the frame did not parse (null: it did)
    return malformed;
  }

  int frameSize() { // in bytes (0 when unknown)
    return bytes == null ? 0 : bytes.length;
  }

  /** A message already parsed (tests, diagnostics): every accessor reads the message. */
  static Inbound of(ProcessingRequest message) {
    return new Inbound(null, message);
  }

  /**
   * Reads one message from its wire bytes, kept (never modified); refused as protobuf-java does.
   */
  static Inbound parse(byte[] bytes) throws InvalidProtocolBufferException {
    Inbound in = new Inbound(bytes, null);
    if (!in.readPlain()) {
      in.headerCount = -1;
      in.bodyLength = -1;
      in.message = parseFully(bytes);
      in.requestCase = in.message.getRequestCase();
    }
    return in;
  }

  private static ProcessingRequest parseFully(byte[] bytes) throws InvalidProtocolBufferException {
    CodedInputStream cis = CodedInputStream.newInstance(bytes);
    cis.enableAliasing(true); // bodies share the array instead of a second copy (never modified)
    ProcessingRequest m = ProcessingRequest.parser().parseFrom(cis);
    cis.checkLastTagWas(0);
    return m;
  }

  RequestCase requestCase() {
    return Objects.requireNonNull(requestCase, "requestCase"); // a malformed frame has none
  }

  /** The message protobuf-java parsed (a message not read from the wire always has one). */
  private ProcessingRequest parsed() {
    return Objects.requireNonNull(message, "message");
  }

  /** The whole message (parsed on first use when it was read from the wire). */
  ProcessingRequest message() {
    if (message == null) {
      try {
        message = parseFully(bytes);
      } catch (InvalidProtocolBufferException e) {
        throw new IllegalStateException("ProcessingRequest does not parse: " + e.getMessage(), e);
      }
    }
    return message;
  }

  /** Whether the message was read from the wire (false: protobuf-java's message is used). */
  boolean fromWire() {
    return wire;
  }

  /** The headers of a request_headers or response_headers message (others: empty). */
  private HttpHeaders messageHeaders() {
    return requestCase == RequestCase.RESPONSE_HEADERS
        ? message().getResponseHeaders()
        : message().getRequestHeaders();
  }

  /** end_of_stream of request_headers or response_headers. */
  boolean headersEndOfStream() {
    return fromWire() ? endOfStream : messageHeaders().getEndOfStream();
  }

  boolean hasProtocolConfig() {
    return fromWire() ? hasProtocolConfig : parsed().hasProtocolConfig();
  }

  /** Whether it carries metadata_context or attributes (false: a signal read parses nothing). */
  boolean hasContext() {
    return !fromWire() || context != null;
  }

  /** Its metadata_context and attributes (as the wire pass parsed them; else the message). */
  ProcessingRequest context() {
    ProcessingRequest c = context;
    return c != null ? c : message();
  }

  BodySendMode requestBodyMode() {
    return fromWire() ? mode(requestBodyMode) : parsed().getProtocolConfig().getRequestBodyMode();
  }

  BodySendMode responseBodyMode() {
    return fromWire() ? mode(responseBodyMode) : parsed().getProtocolConfig().getResponseBodyMode();
  }

  private static BodySendMode mode(int n) {
    BodySendMode m = BodySendMode.forNumber(n);
    return m == null ? BodySendMode.UNRECOGNIZED : m;
  }

  /** The headers as protobuf-java has them (only when the message is used). */
  List<HeaderValue> headerList() {
    return messageHeaders().getHeaders().getHeadersList();
  }

  int headerCount() {
    return headerCount;
  }

  /** Whether the key of wire header {@code i} is exactly {@code name} (ASCII or UTF-8 bytes). */
  boolean keyEquals(int i, byte[] name) {
    int off = spans[2 * i];
    int len = lengthBefore(off);
    return len == name.length
        && (len == 0 || java.util.Arrays.equals(bytes, off, off + len, name, 0, len));
  }

  int keyIn(int i, io.sluice.wire.ByteKeys keys) { // the slot of wire header i's key, or -1
    return keys.find(bytes, spans[2 * i], lengthBefore(spans[2 * i]));
  }

  /** Wire header {@code i}'s raw_value if set, else value; {@code known} when equal (ASCII). */
  String value(int i, @Nullable String known) {
    int off = spans[2 * i + 1];
    return off < 0 ? string(0, 0, known) : string(off, lengthBefore(off), known);
  }

  /** The first value of header {@code name} (request or response headers), or null. */
  @Nullable String header(String name) {
    if (!fromWire()) {
      return EnvoySignals.find(headerList(), name);
    }
    byte[] b = HeaderKeys.utf8(name); // Sluice's own names: encoded once, not per call
    for (int i = 0; i < headerCount; i++) {
      if (keyEquals(i, b)) {
        return value(i, null);
      }
    }
    return null;
  }

  // --- the body of request_body or response_body

  /** The array holding the body (the wire bytes, or a copy of the message's body). */
  byte[] bodyArray() {
    ensureBody();
    return bodyArray;
  }

  int bodyOffset() {
    ensureBody();
    return bodyOffset;
  }

  int bodyLength() {
    ensureBody();
    return bodyLength;
  }

  /** end_of_stream of request_body or response_body. */
  boolean bodyEndOfStream() {
    ensureBody();
    return bodyEndOfStream;
  }

  private void ensureBody() {
    if (bodyLength >= 0) {
      return;
    }
    HttpBody b =
        requestCase == RequestCase.RESPONSE_BODY
            ? message().getResponseBody()
            : message().getRequestBody();
    bodyArray = b.getBody().toByteArray();
    bodyOffset = 0;
    bodyLength = bodyArray.length;
    bodyEndOfStream = b.getEndOfStream();
  }

  // --- the pass over a message

  /** True: a plain request/response headers or body message, read; false: parse it fully. */
  private boolean readPlain() {
    pos = 0;
    int end = bytes.length;
    int member = 0; // the oneof member seen; a second, different one goes to protobuf-java
    while (pos < end) {
      int fieldStart = pos;
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int field = tag >>> 3;
      int type = tag & 7;
      switch (field) {
        case ProcessingRequest.REQUEST_HEADERS_FIELD_NUMBER,
            ProcessingRequest.RESPONSE_HEADERS_FIELD_NUMBER -> {
          int len = length(type, end);
          if ((member != 0 && member != field) || len < 0 || !readHttpHeaders(pos, pos + len)) {
            return false;
          }
          member = field; // a repeated occurrence merges into the first, as protobuf does
        }
        case ProcessingRequest.REQUEST_BODY_FIELD_NUMBER,
            ProcessingRequest.RESPONSE_BODY_FIELD_NUMBER -> {
          int len = length(type, end);
          if ((member != 0 && member != field) || len < 0 || !readHttpBody(pos, pos + len)) {
            return false;
          }
          member = field;
        }
        case ProcessingRequest.REQUEST_TRAILERS_FIELD_NUMBER,
            ProcessingRequest.RESPONSE_TRAILERS_FIELD_NUMBER -> {
          return false; // rare (trailers): protobuf-java reads them
        }
        case ProcessingRequest.PROTOCOL_CONFIG_FIELD_NUMBER -> {
          int len = length(type, end);
          if (len < 0 || !readProtocolConfig(pos, pos + len)) {
            return false;
          }
          hasProtocolConfig = true;
        }
        case ProcessingRequest.METADATA_CONTEXT_FIELD_NUMBER,
            ProcessingRequest.ATTRIBUTES_FIELD_NUMBER -> {
          int len = length(type, end);
          if (len < 0) {
            return false;
          }
          pos += len;
          ProcessingRequest part = parses(fieldStart, pos); // checked as protobuf-java would
          if (part == null) {
            return false;
          }
          context = context == null ? part : context.toBuilder().mergeFrom(part).build();
        }
        default -> {
          if (!skip(type, end)) {
            return false;
          }
        }
      }
    }
    switch (member) {
      case ProcessingRequest.REQUEST_HEADERS_FIELD_NUMBER ->
          requestCase = RequestCase.REQUEST_HEADERS;
      case ProcessingRequest.RESPONSE_HEADERS_FIELD_NUMBER ->
          requestCase = RequestCase.RESPONSE_HEADERS;
      case ProcessingRequest.REQUEST_BODY_FIELD_NUMBER -> requestCase = RequestCase.REQUEST_BODY;
      case ProcessingRequest.RESPONSE_BODY_FIELD_NUMBER -> requestCase = RequestCase.RESPONSE_BODY;
      default -> {
        return false; // no oneof member: protobuf-java decides
      }
    }
    if (requestCase == RequestCase.REQUEST_HEADERS || requestCase == RequestCase.RESPONSE_HEADERS) {
      headerCount = Math.max(headerCount, 0);
    } else if (bodyLength < 0) {
      bodyArray = bytes; // an occurrence without a body field: empty
      bodyOffset = 0;
      bodyLength = 0;
    }
    wire = true;
    return true;
  }

  /** An HttpBody: {@code body} (last occurrence wins) and {@code end_of_stream}. */
  private boolean readHttpBody(int from, int end) {
    pos = from;
    while (pos < end) {
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int type = tag & 7;
      switch (tag >>> 3) {
        case HttpBody.BODY_FIELD_NUMBER -> {
          int len = length(type, end);
          if (len < 0) {
            return false;
          }
          bodyArray = bytes;
          bodyOffset = pos;
          bodyLength = len;
          pos += len;
        }
        case HttpBody.END_OF_STREAM_FIELD_NUMBER -> {
          long v = varintValue(type, end);
          if (v == Long.MIN_VALUE) {
            return false;
          }
          bodyEndOfStream = v != 0;
        }
        default -> {
          if (!skip(type, end)) {
            return false;
          }
        }
      }
    }
    return pos == end;
  }

  private boolean readHttpHeaders(int from, int end) {
    pos = from;
    while (pos < end) {
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int type = tag & 7;
      switch (tag >>> 3) {
        case HttpHeaders.HEADERS_FIELD_NUMBER -> {
          int len = length(type, end);
          if (len < 0 || !readHeaderMap(pos, pos + len)) {
            return false;
          }
        }
        case HttpHeaders.ATTRIBUTES_FIELD_NUMBER -> {
          return false; // deprecated; Envoy sends attributes at the top level
        }
        case HttpHeaders.END_OF_STREAM_FIELD_NUMBER -> {
          long v = varintValue(type, end);
          if (v == Long.MIN_VALUE) {
            return false;
          }
          endOfStream = v != 0;
        }
        default -> {
          if (!skip(type, end)) {
            return false;
          }
        }
      }
    }
    return pos == end;
  }

  private boolean readHeaderMap(int from, int end) {
    pos = from;
    if (headerCount < 0) {
      headerCount = 0;
      spans = new int[2 * Math.max(2, Math.min(16, (end - from) / 16))]; // ~16+ bytes a header
    }
    while (pos < end) {
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int type = tag & 7;
      if ((tag >>> 3) == HeaderMap.HEADERS_FIELD_NUMBER) {
        int len = length(type, end);
        if (len < 0 || !readHeaderValue(pos, pos + len)) {
          return false;
        }
      } else if (!skip(type, end)) {
        return false;
      }
    }
    return pos == end;
  }

  private boolean readHeaderValue(int from, int end) {
    int k = shortPair(from, end, 0x0A, 0x1A); // as Envoy writes one: key, raw_value, both short
    if (k >= 0 && ascii(from + 2, k)) {
      return note(k == 0 ? -1 : from + 2, end - from - 4 - k > 0 ? from + 4 + k : -1, end);
    }
    pos = from;
    int keyOff = from;
    int keyLen = 0;
    int valueOff = from;
    int valueLen = 0;
    int rawOff = from;
    int rawLen = 0;
    while (pos < end) {
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int type = tag & 7;
      switch (tag >>> 3) {
        case HeaderValue.KEY_FIELD_NUMBER -> {
          keyLen = length(type, end);
          keyOff = pos;
          if (keyLen < 0 || !ascii(keyOff, keyLen)) {
            return false; // proto3 strings are checked for UTF-8: protobuf-java does that
          }
          pos += keyLen;
        }
        case HeaderValue.VALUE_FIELD_NUMBER -> {
          valueLen = length(type, end);
          valueOff = pos;
          if (valueLen < 0 || !ascii(valueOff, valueLen)) {
            return false;
          }
          pos += valueLen;
        }
        case HeaderValue.RAW_VALUE_FIELD_NUMBER -> {
          rawLen = length(type, end); // bytes: any content
          rawOff = pos;
          if (rawLen < 0) {
            return false;
          }
          pos += rawLen;
        }
        default -> {
          if (!skip(type, end)) {
            return false;
          }
        }
      }
    }
    int value = rawLen > 0 ? rawOff : valueLen == 0 ? -1 : valueOff; // raw_value if set, else value
    return pos == end && note(keyLen == 0 ? -1 : keyOff, value, end);
  }

  private boolean note(int keyOff, int valueOff, int end) { // a header's spans (-1: empty)
    if (2 * ++headerCount > spans.length) {
      spans = java.util.Arrays.copyOf(spans, spans.length * 2);
    }
    spans[2 * headerCount - 2] = keyOff;
    spans[2 * headerCount - 1] = valueOff;
    pos = end;
    return true;
  }

  private boolean readProtocolConfig(int from, int end) {
    pos = from;
    while (pos < end) {
      int tag = tag(end);
      if (tag <= 0) {
        return false;
      }
      int type = tag & 7;
      int field = tag >>> 3;
      if (field == ProtocolConfiguration.REQUEST_BODY_MODE_FIELD_NUMBER
          || field == ProtocolConfiguration.RESPONSE_BODY_MODE_FIELD_NUMBER) {
        long v = varintValue(type, end);
        if (v == Long.MIN_VALUE) {
          return false;
        }
        if (field == ProtocolConfiguration.REQUEST_BODY_MODE_FIELD_NUMBER) {
          requestBodyMode = (int) v; // an enum is read as int32, as protobuf-java does
        } else {
          responseBodyMode = (int) v;
        }
      } else if (!skip(type, end)) {
        return false;
      }
    }
    return pos == end;
  }

  /** The fields in [from, to) as protobuf-java parses them into a ProcessingRequest, or null. */
  private @Nullable ProcessingRequest parses(int from, int to) {
    try {
      return ProcessingRequest.parser().parseFrom(bytes, from, to - from);
    } catch (InvalidProtocolBufferException e) {
      return null;
    }
  }

  /** The frame as it came (or the message encoded, for one built from a message). */
  byte[] frameBytes() {
    return bytes != null ? bytes : parsed().toByteArray();
  }
}
