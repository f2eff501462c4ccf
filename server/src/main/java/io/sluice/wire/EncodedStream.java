package io.sluice.wire;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * Pre-encoded message bytes as a marshaller's stream: gRPC's framer drains a {@link Drainable} of
 * {@link KnownLength} straight into its frame, without copying through an intermediate buffer.
 */
public final class EncodedStream extends ByteArrayInputStream implements Drainable, KnownLength {
  public EncodedStream(byte[] bytes) {
    super(bytes);
  }

  @Override
  public int drainTo(OutputStream target) throws IOException {
    int n = count - pos;
    target.write(buf, pos, n);
    pos = count;
    return n;
  }
}
