package io.sluice.bench;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import io.grpc.MethodDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * An ext_proc answer as the floor's generator reads it: only the field number of its {@code
 * ProcessingResponse.response} oneof (1 request_headers … 7 immediate_response), every other field
 * skipped unread. The generator then spends the same on every target's answer, however much dynamic
 * metadata or how many mutations it carries.
 */
record AnswerKind(int field) {
  /** {@code ProcessingResponse.immediate_response}. */
  static final int IMMEDIATE_RESPONSE = 7;

  private static final AnswerKind[] BY_FIELD = new AnswerKind[IMMEDIATE_RESPONSE + 1];

  static {
    for (int i = 0; i < BY_FIELD.length; i++) {
      BY_FIELD[i] = new AnswerKind(i);
    }
  }

  boolean refused() {
    return field == IMMEDIATE_RESPONSE;
  }

  /** Reads the answer's top-level tags; the oneof member met last names it (0: none). */
  static AnswerKind read(InputStream in) throws IOException {
    CodedInputStream c = CodedInputStream.newInstance(in);
    int kind = 0;
    for (int tag = c.readTag(); tag != 0; tag = c.readTag()) {
      int field = WireFormat.getTagFieldNumber(tag);
      if (field >= 1 && field <= IMMEDIATE_RESPONSE) { // protobuf: the last member wins
        kind = field;
      }
      c.skipField(tag);
    }
    return BY_FIELD[kind];
  }

  /**
   * An RLS answer as the generator reads it: only {@code RateLimitResponse.overall_code} (field 1),
   * every other field (the statuses, headers, quota Sluice writes as envoyproxy/ratelimit does)
   * skipped unread, so a target's answer costs the generator the same however much it carries. The
   * value is the code's number (0 UNKNOWN, 1 OK, 2 OVER_LIMIT), boxed from Integer's cache.
   */
  static int overallCode(InputStream in) throws IOException {
    CodedInputStream c = CodedInputStream.newInstance(in);
    int code = 0;
    for (int tag = c.readTag(); tag != 0; tag = c.readTag()) {
      if (tag == OVERALL_CODE_TAG) {
        code = c.readEnum(); // protobuf: the last one wins
      } else {
        c.skipField(tag);
      }
    }
    return code;
  }

  /** Field 1, varint. */
  private static final int OVERALL_CODE_TAG = 1 << 3 | WireFormat.WIRETYPE_VARINT;

  /** {@link #overallCode}'s marshaller. */
  static final MethodDescriptor.Marshaller<Integer> RLS_CODE = reading(AnswerKind::overallCode);

  /** {@link #read}'s marshaller. */
  static final MethodDescriptor.Marshaller<AnswerKind> MARSHALLER = reading(AnswerKind::read);

  /** How an answer is read from its bytes. */
  private interface Reader<T> {
    T read(InputStream in) throws IOException;
  }

  /** A marshaller that reads answers with {@code reader}: the generator never sends one. */
  private static <T> MethodDescriptor.Marshaller<T> reading(Reader<T> reader) {
    return new MethodDescriptor.Marshaller<>() {
      @Override
      public InputStream stream(T value) {
        throw new UnsupportedOperationException("the generator sends no answers");
      }

      @Override
      public T parse(InputStream stream) {
        try {
          return reader.read(stream);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    };
  }
}
