package io.sluice.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.InternalChannelz.TransportStats;
import io.grpc.internal.TransportTracer;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CoarseTransportClockTest {
  @Test
  void withThisGrpc_theTracersOfTheBuilder_stampTheGivenClock() throws Exception {
    NettyServerBuilder b = NettyServerBuilder.forPort(0);
    AtomicLong wallMillis = new AtomicLong(1_765_000_000_123L);

    assertThat(CoarseTransportClock.install(b, wallMillis::get)).isTrue();

    TransportTracer tracer = factoryOf(b).create();
    tracer.reportMessageSent(1);
    wallMillis.addAndGet(5);
    tracer.reportMessageReceived();
    tracer.reportRemoteStreamStarted();
    TransportStats stats = tracer.getStats();
    assertThat(stats.lastMessageSentTimeNanos).isEqualTo(1_765_000_000_123L * 1_000_000L);
    assertThat(stats.lastMessageReceivedTimeNanos).isEqualTo(1_765_000_000_128L * 1_000_000L);
    assertThat(stats.lastRemoteStreamCreatedTimeNanos).isEqualTo(1_765_000_000_128L * 1_000_000L);
    // the counts grpc keeps beside the stamps are grpc's as before
    assertThat(stats.messagesSent).isEqualTo(1);
    assertThat(stats.messagesReceived).isEqualTo(1);
    assertThat(stats.streamsStarted).isEqualTo(1);
  }

  @Test
  void eachServerBuilt_getsItsOwnFactory_withItsOwnClock() throws Exception {
    NettyServerBuilder one = NettyServerBuilder.forPort(0);
    NettyServerBuilder two = NettyServerBuilder.forPort(0);
    CoarseTransportClock.install(one, () -> 1L);
    CoarseTransportClock.install(two, () -> 2L);

    TransportTracer a = factoryOf(one).create();
    TransportTracer b = factoryOf(two).create();
    a.reportMessageSent(1);
    b.reportMessageSent(1);

    assertThat(a.getStats().lastMessageSentTimeNanos).isEqualTo(1_000_000L);
    assertThat(b.getStats().lastMessageSentTimeNanos).isEqualTo(2_000_000L);
  }

  private static TransportTracer.Factory factoryOf(NettyServerBuilder b) throws Exception {
    Field f = NettyServerBuilder.class.getDeclaredField("transportTracerFactory");
    f.setAccessible(true);
    return (TransportTracer.Factory) f.get(b);
  }
}
