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

  /** The generator never sends an answer: {@link #stream} is unused. */
  static final MethodDescriptor.Marshaller<AnswerKind> MARSHALLER =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(AnswerKind value) {
          throw new UnsupportedOperationException("the generator sends no answers");
        }

        @Override
        public AnswerKind parse(InputStream stream) {
          try {
            return read(stream);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
}
