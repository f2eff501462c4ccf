package io.sluice.transport;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.socket.DuplexChannel;
import io.grpc.netty.shaded.io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One HTTP/2 connection's guard against rapid reset, in front of grpc's codec: every read passes
 * through a {@link ResetScanner} first. When a read crosses the premature-reset limit, that read
 * and every later one are dropped undecoded (the point: grpc never decodes the rest of the flood,
 * however fast it arrived), {@code refused} is told once (a short detail for the log), the client
 * gets {@code GOAWAY ENHANCE_YOUR_CALM} naming the last stream grpc saw, then the end of the
 * stream, and the connection is closed.
 *
 * <p>Concurrency: one instance per connection, called on its event loop only.
 */
public final class PrematureResetGuard extends ChannelInboundHandlerAdapter {
  /** How long the socket stays open (reading nothing) after the GOAWAY and the write side's FIN. */
  static final long LINGER_MILLIS = 1_000;

  /** HTTP/2 error code ENHANCE_YOUR_CALM. */
  static final int ENHANCE_YOUR_CALM = 0xb;

  private static final byte[] DEBUG = "premature_resets".getBytes(StandardCharsets.US_ASCII);

  private final ResetScanner scanner;
  private final Consumer<String> refused;
  private int passedStreamId;
  private boolean closing;

  /**
   * @param maxPrematureResets premature resets that close the connection (at least 1)
   * @param ratio the share of the connection's streams they must also be, 0 .. 1
   * @param trackedStreams how many opened streams without DATA yet are remembered
   * @param refused told once, on the event loop, when this connection is closed
   */
  public PrematureResetGuard(
      int maxPrematureResets, double ratio, int trackedStreams, Consumer<String> refused) {
    this.scanner = new ResetScanner(maxPrematureResets, ratio, trackedStreams);
    this.refused = refused;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (closing) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (!(msg instanceof ByteBuf buf) || !scanner.scan(buf)) {
      passedStreamId = scanner.highestStreamId();
      ctx.fireChannelRead(msg);
      return;
    }
    closing = true;
    buf.release();
    ctx.channel().config().setAutoRead(false);
    refused.accept(
        scanner.prematureResets()
            + " premature resets of "
            + scanner.streams()
            + " streams on "
            + ctx.channel().remoteAddress());
    var unused = ctx.writeAndFlush(goAway(ctx, passedStreamId)).addListener(f -> finish(ctx));
  }

  /**
   * After the GOAWAY: the write side is shut (FIN), so the client reads the GOAWAY and then the end
   * of the stream, and the socket is closed {@link #LINGER_MILLIS} later. Closing at once, with the
   * flood's bytes unread in the socket, sends a TCP reset that can discard the GOAWAY on its way.
   * Both are done from here toward the socket: a channel close would pass grpc's codec, whose close
   * is a graceful GOAWAY that waits for the open streams.
   */
  private static void finish(ChannelHandlerContext ctx) {
    if (ctx.channel() instanceof DuplexChannel d && d.isActive()) {
      var unusedShut = d.shutdownOutput();
      var unusedLater =
          ctx.executor().schedule(() -> close(ctx), LINGER_MILLIS, TimeUnit.MILLISECONDS);
    } else {
      close(ctx);
    }
  }

  private static void close(ChannelHandlerContext ctx) {
    var unused = ctx.close();
  }

  /** GOAWAY(last stream id, ENHANCE_YOUR_CALM, "premature_resets"). */
  private static ByteBuf goAway(ChannelHandlerContext ctx, int lastStreamId) {
    int length = 8 + DEBUG.length;
    ByteBuf b = ctx.alloc().buffer(ResetScanner.FRAME_HEADER_BYTES + length);
    b.writeMedium(length).writeByte(0x7).writeByte(0).writeInt(0);
    b.writeInt(lastStreamId).writeInt(ENHANCE_YOUR_CALM).writeBytes(DEBUG);
    return b;
  }
}
