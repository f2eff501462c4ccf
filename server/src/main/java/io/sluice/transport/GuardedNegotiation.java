package io.sluice.transport;

import io.grpc.ServerCredentials;
import io.grpc.internal.ObjectPool;
import io.grpc.netty.shaded.io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.shaded.io.grpc.netty.InternalNettyServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelPipeline;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslHandler;
import io.grpc.netty.shaded.io.netty.util.AsciiString;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Puts a handler of ours in every connection's pipeline where it sees the client's HTTP/2 bytes
 * before grpc's codec does: after TLS (so it reads plaintext frames), before grpc's {@code
 * GrpcHttp2ConnectionHandler}.
 *
 * <p>How: grpc-netty's server credentials become a protocol negotiator ({@code
 * InternalNettyServerCredentials.toNegotiator}, the same conversion a server does), which we wrap
 * and hand back as credentials ({@code InternalNettyServerCredentials.create}). Our negotiator's
 * handler adds grpc's own negotiation handler after itself and, at the connection's first read
 * (after channelActive, when grpc's plaintext or TLS negotiation has set its handlers up), puts the
 * guard right after the last {@link SslHandler} (TLS) or right after itself (plaintext), then
 * leaves. Everything grpc negotiates (TLS, ALPN, mTLS, the replacement of its negotiation handlers
 * by its codec) is untouched; the guard's position does not depend on grpc's private handler
 * classes, only on these two {@code @Internal} accessors, which {@code GuardedNegotiationTest}
 * checks against the grpc version in the parent pom.
 */
public final class GuardedNegotiation {
  /** The guard's name in the pipeline. */
  public static final String GUARD = "sluice-premature-reset-guard";

  private GuardedNegotiation() {}

  /** {@code credentials} with {@code guard} (one new handler per connection) in front of grpc. */
  public static ServerCredentials wrap(
      ServerCredentials credentials, Supplier<? extends ChannelHandler> guard) {
    InternalProtocolNegotiator.ServerFactory inner =
        InternalNettyServerCredentials.toNegotiator(credentials);
    return InternalNettyServerCredentials.create(new Factory(inner, guard));
  }

  private record Factory(
      InternalProtocolNegotiator.ServerFactory inner, Supplier<? extends ChannelHandler> guard)
      implements InternalProtocolNegotiator.ServerFactory {
    @Override
    public InternalProtocolNegotiator.ProtocolNegotiator newNegotiator(
        ObjectPool<? extends Executor> offloadExecutorPool) {
      return new Negotiator(inner.newNegotiator(offloadExecutorPool), guard);
    }
  }

  private record Negotiator(
      InternalProtocolNegotiator.ProtocolNegotiator inner, Supplier<? extends ChannelHandler> guard)
      implements InternalProtocolNegotiator.ProtocolNegotiator {
    @Override
    public AsciiString scheme() {
      return inner.scheme();
    }

    @Override
    public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
      return new Placer(inner.newHandler(grpcHandler), guard.get());
    }

    @Override
    public void close() {
      inner.close();
    }
  }

  /**
   * Adds grpc's negotiation after itself; at the first read, puts the guard in place and leaves.
   */
  private static final class Placer extends ChannelInboundHandlerAdapter {
    private final ChannelHandler negotiation;
    private final ChannelHandler guard;

    Placer(ChannelHandler negotiation, ChannelHandler guard) {
      this.negotiation = negotiation;
      this.guard = guard;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      ctx.pipeline().addAfter(ctx.name(), null, negotiation);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ChannelPipeline p = ctx.pipeline();
      String after = ctx.name();
      for (Map.Entry<String, ChannelHandler> e : p) {
        if (e.getValue() instanceof SslHandler) {
          after = e.getKey();
        }
      }
      p.addAfter(after, GUARD, guard);
      ctx.fireChannelRead(msg);
      if (!ctx.isRemoved()) {
        p.remove(this);
      }
    }
  }
}
