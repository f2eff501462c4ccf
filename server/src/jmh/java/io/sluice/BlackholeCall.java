package io.sluice;

import io.grpc.stub.ServerCallStreamObserver;
import org.openjdk.jmh.infra.Blackhole;

/** Stands in for grpc's call: hands every answer to the blackhole. */
public final class BlackholeCall<T> extends ServerCallStreamObserver<T> {
  private final Blackhole bh;
  private Runnable onCancel = () -> {};

  public BlackholeCall(Blackhole bh) {
    this.bh = bh;
  }

  @Override
  public void onNext(T value) {
    bh.consume(value);
  }

  @Override
  public void onError(Throwable t) {
    bh.consume(t);
  }

  @Override
  public void onCompleted() {
    bh.consume(this);
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public void setOnCancelHandler(Runnable onCancelHandler) {
    onCancel = onCancelHandler;
  }

  /** The client reset the stream (how Envoy ends an ext_proc stream): runs the cancel handler. */
  public void cancel() {
    onCancel.run();
  }

  @Override
  public void setCompression(String compression) {}

  @Override
  public boolean isReady() {
    return true;
  }

  @Override
  public void setOnReadyHandler(Runnable onReadyHandler) {}

  @Override
  public void request(int count) {}

  @Override
  public void setMessageCompression(boolean enable) {}

  @Override
  public void disableAutoInboundFlowControl() {}
}
