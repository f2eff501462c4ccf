package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A reset runs the stream's cancel path once: gRPC calls the cancel handler and then the request
 * observer's {@code onError} ({@link ExtProcCall}), and the second adds nothing but work.
 */
class StreamCancelOnceTest {
  @Test
  void aResetEndsTheStreamThroughOneCancelThoughOnErrorFollows() throws Exception {
    try (SluiceServer server =
        SluiceServer.start(ConfigLoader.parse(LlmdInteropServiceTest.CONFIG))) {
      AtomicInteger cancels = new AtomicInteger();
      StreamFaults counting =
          step -> {
            if (step == StreamFaults.Step.CANCEL) {
              cancels.incrementAndGet();
            }
          };
      ExtProcService service = new ExtProcService(server::runtime, () -> false, counting);
      ExtProcCallTest.FakeCall call = new ExtProcCallTest.FakeCall();
      ServerCall.Listener<Inbound> l =
          ExtProcCall.handler(service::open).startCall(call, new Metadata());
      Map<String, String> chat = Map.of(":path", "/v1/chat/completions", ":method", "POST");
      var headers =
          ExtProcTestClient.headers(chat, false, BodySendMode.BUFFERED, BodySendMode.STREAMED);
      l.onMessage(Inbound.parse(headers.toByteArray()));
      assertThat(call.sent).hasSize(1); // CONTINUE: the body decides
      l.onCancel(); // the cancel handler, then onError(CANCELLED)
      assertThat(cancels).as("the cancel path's runs").hasValue(1);
      assertThat(service.liveStreams()).isZero();
    }
  }
}
