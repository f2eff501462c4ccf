package io.sluice.extproc;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import java.io.InputStream;

/**
 * One answer on an ext_proc stream: the wire bytes of a {@code ProcessingResponse}. The constant
 * CONTINUEs are encoded once, the admit and refusal answers are written by {@link AnswerEncoder}
 * without building protobuf objects, and the rest (holds, protocol errors) come from protobuf-java.
 * On the wire it is exactly a {@code ProcessingResponse}; {@link #MARSHALLER} hands the bytes to
 * gRPC's framer.
 */
final class Answer {
  private final byte[] bytes;

  private Answer(byte[] bytes) {
    this.bytes = bytes;
  }

  static Answer of(ProcessingResponse message) {
    return new Answer(message.toByteArray());
  }

  static Answer encoded(byte[] bytes) {
    return new Answer(bytes);
  }

  /** The answer as a message (tests and diagnostics; never on the request path). */
  ProcessingResponse message() {
    try {
      return ProcessingResponse.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("an answer that does not parse: " + e.getMessage(), e);
    }
  }

  /** The wire bytes (tests: never modify them). */
  byte[] bytes() {
    return bytes;
  }

  int size() {
    return bytes.length;
  }

  /** Writes pre-encoded answers straight into gRPC's frame; parses with protobuf. */
  static final MethodDescriptor.Marshaller<Answer> MARSHALLER =
      new MethodDescriptor.Marshaller<>() {
        private final MethodDescriptor.Marshaller<ProcessingResponse> proto =
            ProtoUtils.marshaller(ProcessingResponse.getDefaultInstance());

        @Override
        public InputStream stream(Answer value) {
          return new io.sluice.wire.EncodedStream(value.bytes);
        }

        @Override
        public Answer parse(InputStream stream) {
          return of(proto.parse(stream));
        }
      };
}
