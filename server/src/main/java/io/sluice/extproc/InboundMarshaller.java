package io.sluice.extproc;

import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.MethodDescriptor;
import io.sluice.wire.ProtoReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.jspecify.annotations.Nullable;

/** gRPC's marshaller of {@link Inbound}: reads the message bytes once and hands them over. */
final class InboundMarshaller implements MethodDescriptor.Marshaller<Inbound> {
  static final InboundMarshaller INSTANCE = new InboundMarshaller();

  private InboundMarshaller() {}

  @Override
  public InputStream stream(Inbound value) {
    return new ByteArrayInputStream(value.frameBytes());
  }

  /**
   * Never throws: a frame that does not parse becomes a {@linkplain Inbound#malformed malformed}
   * Inbound that the stream ends with INVALID_ARGUMENT through its own close path. (A throw here
   * would end the call UNKNOWN inside grpc-java, with a SEVERE stack trace, and the stream's
   * release path would never run.)
   */
  @Override
  public Inbound parse(InputStream stream) {
    byte[] bytes;
    try {
      bytes = ProtoReader.readAll(stream);
    } catch (IOException | RuntimeException e) {
      return Inbound.malformed(null, "unreadable frame: " + e.getClass().getSimpleName());
    }
    try {
      return Inbound.parse(bytes);
    } catch (InvalidProtocolBufferException e) {
      return Inbound.malformed(bytes, firstSentence(e.getMessage()));
    } catch (RuntimeException e) { // a reader bug must not escape into grpc-java either
      return Inbound.malformed(bytes, "unreadable frame: " + e.getClass().getSimpleName());
    }
  }

  private static String firstSentence(@Nullable String m) {
    if (m == null) {
      return "malformed frame";
    }
    int dot = m.indexOf(". ");
    String s = dot > 0 ? m.substring(0, dot) : m;
    return s.length() > 160 ? s.substring(0, 160) : s;
  }
}
