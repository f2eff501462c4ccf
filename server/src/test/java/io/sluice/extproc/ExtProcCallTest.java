package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** {@link ExtProcCall} keeps grpc-java's bidi stub contract, without a stack trace per reset. */
class ExtProcCallTest {
  private final FakeCall call = new FakeCall();
  private final List<String> seen = new ArrayList<>();
  private final AtomicReference<ServerCallStreamObserver<Answer>> out = new AtomicReference<>();
  private final AtomicReference<Metadata> opened = new AtomicReference<>();

  private ServerCall.Listener<Inbound> start(boolean cancelHandler) {
    Metadata md = new Metadata();
    ServerCall.Listener<Inbound> l =
        ExtProcCall.handler(
                (o, m) -> {
                  out.set(o);
                  opened.set(m);
                  if (cancelHandler) {
                    o.setOnCancelHandler(() -> seen.add("cancel-handler"));
                  }
                  return new StreamObserver<>() {
                    @Override
                    public void onNext(Inbound value) {
                      seen.add("next");
                    }

                    @Override
                    public void onError(Throwable t) {
                      seen.add("error:" + Status.fromThrowable(t).getCode());
                      assertThat(t.getStackTrace()).isEmpty();
                    }

                    @Override
                    public void onCompleted() {
                      seen.add("completed");
                    }
                  };
                })
            .startCall(call, md);
    assertThat(opened.get()).isSameAs(md); // the call's own metadata, handed over at once
    return l;
  }

  @Test
  void requestsOneMessageAtTheStartAndOneAfterEach() {
    ServerCall.Listener<Inbound> l = start(true);
    assertThat(call.requested).isEqualTo(1);
    l.onMessage(Inbound.malformed(null, "x"));
    l.onMessage(Inbound.malformed(null, "y"));
    assertThat(call.requested).isEqualTo(3);
    assertThat(seen).containsExactly("next", "next");
  }

  @Test
  void aCancelRunsTheHandlerThenOnErrorWithoutAStackTrace() {
    ServerCall.Listener<Inbound> l = start(true);
    l.onCancel();
    assertThat(seen).containsExactly("cancel-handler", "error:CANCELLED");
    assertThat(ExtProcCall.CANCELLED.getStatus().getDescription()).isEqualTo("client cancelled");
    // an answer after the cancel is dropped (a cancel handler is set)
    out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS);
    assertThat(call.sent).isEmpty();
  }

  @Test
  void aCancelAfterTheHalfCloseDoesNotCallOnError() {
    ServerCall.Listener<Inbound> l = start(true);
    l.onHalfClose();
    l.onCancel();
    assertThat(seen).containsExactly("completed", "cancel-handler");
  }

  @Test
  void anAnswerAfterACancelWithoutAHandlerIsRefused() {
    ServerCall.Listener<Inbound> l = start(false);
    l.onCancel();
    assertThatThrownBy(() -> out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS))
        .isInstanceOf(StatusRuntimeException.class);
  }

  @Test
  void headersGoOnceBeforeTheFirstAnswerAndTheEndsCloseTheCall() {
    start(true);
    out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS);
    out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS);
    assertThat(call.headers).isEqualTo(1);
    assertThat(call.sent).hasSize(2);
    Metadata trailers = new Metadata();
    trailers.put(Metadata.Key.of("x-why", Metadata.ASCII_STRING_MARSHALLER), "because");
    out.get().onError(Status.UNAVAILABLE.withDescription("gone").asRuntimeException(trailers));
    assertThat(call.closed.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(call.trailers.get(Metadata.Key.of("x-why", Metadata.ASCII_STRING_MARSHALLER)))
        .isEqualTo("because");
    assertThatThrownBy(() -> out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void onCompletedClosesOk() {
    start(true);
    out.get().onCompleted();
    assertThat(call.closed.isOk()).isTrue();
    assertThatThrownBy(() -> out.get().onNext(Responses.CONTINUE_RESPONSE_HEADERS))
        .isInstanceOf(IllegalStateException.class);
  }

  /** Records what the handler does to the call. */
  static final class FakeCall extends ServerCall<Inbound, Answer> {
    int requested;
    int headers;
    final List<Answer> sent = new ArrayList<>();
    Status closed;
    Metadata trailers;

    @Override
    public void request(int numMessages) {
      requested += numMessages;
    }

    @Override
    public void sendHeaders(Metadata headers) {
      this.headers++;
    }

    @Override
    public void sendMessage(Answer message) {
      sent.add(message);
    }

    @Override
    public void close(Status status, Metadata trailers) {
      closed = status;
      this.trailers = trailers;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }

    @Override
    public MethodDescriptor<Inbound, Answer> getMethodDescriptor() {
      return ExtProcService.PROCESS;
    }
  }
}
