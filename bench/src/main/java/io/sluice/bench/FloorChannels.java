package io.sluice.bench;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The generator's channels to each target, and the client event loops they run on. The generator
 * has event loops of its own (on grpc's shared group the client and server ends of a connection
 * could land on one thread, which then bounds that target's rate while the other threads idle: some
 * in-process runs measured Sluice at 0.6 with the process below 1.7 cores). By default each target
 * gets {@link #LOOPS} loops of its own, so its channels sit on them the same way for every target
 * (channel {@code i} on loop {@code i mod 2}); with {@code --shared-client-loops} all targets share
 * one group of two, as before 2026-12-06 evening, where a channel's loop is whichever the group's
 * round robin hands out when the channel first connects.
 */
final class FloorChannels implements AutoCloseable {
  /** Client event loops per group. */
  static final int LOOPS = 2;

  private final Map<String, List<ManagedChannel>> channels = new LinkedHashMap<>();
  private final List<EventLoopGroup> groups = new ArrayList<>();

  /**
   * Opens {@code perTarget} channels to each target's port ({@code ports}: target → port, in the
   * order targets are listed), on loops of the target's own or on one shared group.
   */
  FloorChannels(Map<String, Integer> ports, int perTarget, boolean sharedLoops) {
    EventLoopGroup shared = sharedLoops ? newLoops("floor-client") : null;
    int n = 0;
    for (Map.Entry<String, Integer> e : ports.entrySet()) {
      EventLoopGroup loops = shared != null ? shared : newLoops("floor-client-" + n++);
      List<ManagedChannel> chans = new ArrayList<>();
      for (int i = 0; i < perTarget; i++) {
        chans.add(channel(loops, e.getValue()));
      }
      channels.put(e.getKey(), chans);
    }
  }

  /** How many groups of client event loops the channels run on. */
  int loopGroups() {
    return groups.size();
  }

  /** The target's channels. */
  List<ManagedChannel> of(String target) {
    return Objects.requireNonNull(channels.get(target), target);
  }

  /** {@link #LOOPS} client event loops (epoll where available, as grpc's shared group uses). */
  private EventLoopGroup newLoops(String name) {
    DefaultThreadFactory threads = new DefaultThreadFactory(name, true);
    EventLoopGroup g =
        Epoll.isAvailable()
            ? new EpollEventLoopGroup(LOOPS, threads)
            : new NioEventLoopGroup(LOOPS, threads);
    groups.add(g);
    return g;
  }

  private static ManagedChannel channel(EventLoopGroup loops, int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port)
        .eventLoopGroup(loops)
        .channelType(
            loops instanceof EpollEventLoopGroup
                ? EpollSocketChannel.class
                : NioSocketChannel.class)
        .usePlaintext()
        .directExecutor()
        .flowControlWindow(1 << 20)
        .build();
  }

  @Override
  public void close() {
    channels.values().forEach(l -> l.forEach(ManagedChannel::shutdownNow));
    groups.forEach(g -> g.shutdownGracefully(0, 1, TimeUnit.SECONDS));
  }
}
