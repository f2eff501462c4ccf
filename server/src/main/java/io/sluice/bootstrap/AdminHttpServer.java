package io.sluice.bootstrap;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The admin HTTP port: {@code /metrics} (Prometheus), {@code /healthz} (liveness: the process
 * answers), {@code /readyz} (readiness: serving and not draining), {@code /config} (the effective
 * config), plus routes other modules add, and {@code /}: the list of them with what each answers.
 *
 * <p>Netty (the unshaded copy lettuce brings; netty-bom pins it), HTTP/1.1 with keep-alive: one I/O
 * thread that never blocks, so a slow or half-sent request holds a buffer, not a thread; a request
 * must arrive whole within {@link #REQUEST_DEADLINE_MILLIS} of its first byte and an idle
 * connection is closed after {@link #IDLE_SECONDS}; at most {@link #MAX_CONNECTIONS} connections.
 * Routes run on 2 bounded worker threads (503 when 64 wait), the probes ({@code /healthz}, {@code
 * /readyz}) on a thread of their own. GET routes answer GET and HEAD, body routes POST, anything
 * else 405 with {@code Allow}; body routes answer loopback callers only (403) unless they are on a
 * control listener of their own ({@link #attachControl}, {@code server.admin.control}), where the
 * bind address is the access rule. Off the request path.
 */
// Netty's channel and group futures (close, write, shutdown): a failure there closes the
// connection, which is all this server would do about it
@SuppressWarnings("FutureReturnValueIgnored")
public final class AdminHttpServer implements AutoCloseable {
  /** A response: status, content type, body. */
  public record Reply(int status, String contentType, @Nullable String body) {
    public static Reply text(int status, String body) {
      return new Reply(status, "text/plain; charset=utf-8", body);
    }

    public static Reply json(int status, String body) {
      return new Reply(status, "application/json", body);
    }
  }

  /** Nothing of a request may take longer to arrive than this (slow clients are closed). */
  static final long REQUEST_DEADLINE_MILLIS = 10_000;

  /** An idle keep-alive connection is closed after this. */
  static final int IDLE_SECONDS = 30;

  static final int MAX_CONNECTIONS = 128;
  static final int MAX_BODY_BYTES = 1 << 20;

  private final MultiThreadIoEventLoopGroup accept;
  private final MultiThreadIoEventLoopGroup io;
  // slow routes (/metrics, /config, /json): 2 threads, 64 waiting, then 503
  private final ThreadPoolExecutor workers = pool("sluice-admin", 2);
  // /healthz and /readyz on a thread of their own: a busy or slow route never delays them
  private final ThreadPoolExecutor probes = pool("sluice-admin-probe", 1);
  private final Map<String, Route> routes = new ConcurrentHashMap<>();
  private final AtomicInteger connections = new AtomicInteger();
  // requests handed to a route whose answer is not written yet (tests: nothing hangs)
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Channel channel;
  private final java.util.Map<String, String> described =
      java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<>());
  // the state-changing routes' own listener (server.admin.control.port), started and closed with
  // this one; null: they are mounted here, loopback callers only
  private volatile @Nullable AdminHttpServer control;

  /** A mounted path: what it answers, which methods, where it runs. */
  private record Route(Handler handler, boolean post, boolean probe, boolean loopbackOnly) {}

  /** A decoded request as a route sees it. */
  private record Request(String rawQuery, String body) {}

  /** What a route computes from the request (a stage for routes that wait on the store). */
  @FunctionalInterface
  private interface Handler {
    CompletionStage<Reply> handle(Request request);
  }

  public AdminHttpServer(String host, int port) throws IOException {
    this.accept =
        new MultiThreadIoEventLoopGroup(
            1, daemon("sluice-admin-accept"), NioIoHandler.newFactory());
    this.io =
        new MultiThreadIoEventLoopGroup(1, daemon("sluice-admin-io"), NioIoHandler.newFactory());
    ServerBootstrap b =
        new ServerBootstrap()
            .group(accept, io)
            .channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, 64)
            // nothing is read before start(): the routes are mounted by then
            .option(ChannelOption.AUTO_READ, false)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    if (connections.incrementAndGet() > MAX_CONNECTIONS) {
                      connections.decrementAndGet();
                      ch.close();
                      return;
                    }
                    ch.closeFuture().addListener(f -> connections.decrementAndGet());
                    ch.pipeline()
                        .addLast(new IdleStateHandler(0, 0, IDLE_SECONDS))
                        .addLast(new RequestDeadline())
                        .addLast(new HttpServerCodec(4096, 8192, 8192))
                        .addLast(new HttpObjectAggregator(MAX_BODY_BYTES))
                        .addLast(new Dispatch());
                  }
                });
    io.netty.channel.ChannelFuture bound =
        b.bind(new InetSocketAddress(host, port)).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      accept.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      io.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      workers.shutdownNow();
      probes.shutdownNow();
      Throwable c = bound.cause();
      throw c instanceof IOException e ? e : new IOException(String.valueOf(c), c);
    }
    this.channel = bound.channel();
    mount("/", new Route(r -> done(index(r.rawQuery())), false, false, false));
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  private static ThreadPoolExecutor pool(String name, int threads) {
    return new ThreadPoolExecutor(
        threads,
        threads,
        0,
        TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(64),
        daemon(name),
        new ThreadPoolExecutor.AbortPolicy());
  }

  private static CompletionStage<Reply> done(Reply r) {
    return CompletableFuture.completedFuture(r);
  }

  /** {@code GET /}: every route with what it answers (text, or JSON with {@code ?format=json}). */
  private Reply index(String rawQuery) {
    java.util.Map<String, String> routes;
    synchronized (described) {
      routes = new java.util.LinkedHashMap<>(described);
    }
    return AdminText.index(routes, rawQuery);
  }

  /** Adds {@code path} to the list {@code GET /} shows. */
  public AdminHttpServer describe(String path, String description) {
    described.put(path, description);
    return this;
  }

  /**
   * A POST route that reads the request body (e.g. {@code POST /json}); answers only callers on a
   * loopback address (403 otherwise), as it may change state. Its stage must complete within 5 s.
   */
  public AdminHttpServer routeWithBody(
      String path,
      java.util.function.Function<String, java.util.concurrent.CompletionStage<Reply>> handler) {
    return routeWithBody(path, handler, true);
  }

  /**
   * As above; {@code loopbackOnly} false on a control listener of its own, whose bind address
   * (loopback by default) says who may call.
   */
  public AdminHttpServer routeWithBody(
      String path,
      java.util.function.Function<String, java.util.concurrent.CompletionStage<Reply>> handler,
      boolean loopbackOnly) {
    return mount(path, new Route(r -> handler.apply(r.body()), true, false, loopbackOnly));
  }

  /**
   * Gives the state-changing routes a listener of their own ({@code server.admin.control.port}):
   * started and closed with this server.
   */
  public void attachControl(AdminHttpServer controlServer) {
    this.control = controlServer;
  }

  /** The control listener, or null when the state-changing routes are served here. */
  public @Nullable AdminHttpServer control() {
    return control;
  }

  public AdminHttpServer route(String path, Supplier<Reply> handler) {
    return mount(path, new Route(r -> done(handler.get()), false, false, false));
  }

  /** A GET route listed by {@code GET /} with {@code description}. */
  public AdminHttpServer route(String path, String description, Supplier<Reply> handler) {
    describe(path, description);
    return route(path, handler);
  }

  /**
   * A GET route for the kubelet ({@code /healthz}, {@code /readyz}): it runs on a thread no other
   * route uses, so slow clients and busy routes never delay it. {@code handler} must be cheap.
   */
  public AdminHttpServer probe(String path, String description, Supplier<Reply> handler) {
    describe(path, description);
    return mount(path, new Route(r -> done(handler.get()), false, true, false));
  }

  /** A route that reads the query string's parameters (e.g. {@code /config?format=yaml}). */
  public AdminHttpServer routeWithQuery(
      String path,
      String description,
      java.util.function.Function<java.util.Map<String, String>, Reply> handler) {
    describe(path, description);
    return mount(
        path,
        new Route(r -> done(handler.apply(AdminText.query(r.rawQuery()))), false, false, false));
  }

  /** Exact-path mount: other paths are 404; failures are 500 without a stack trace. */
  private AdminHttpServer mount(String path, Route route) {
    routes.put(path, route);
    return this;
  }

  /**
   * Closes a connection whose request has not fully arrived {@link #REQUEST_DEADLINE_MILLIS} after
   * its first byte (a slowloris holds nothing for long), and one idle past {@link #IDLE_SECONDS}.
   */
  private static final class RequestDeadline extends ChannelDuplexHandler {
    private @Nullable ScheduledFuture<?> deadline;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      if (deadline == null) {
        deadline =
            ctx.executor()
                .schedule(() -> ctx.close(), REQUEST_DEADLINE_MILLIS, TimeUnit.MILLISECONDS);
      }
      super.channelRead(ctx, msg);
    }

    /** The request arrived whole: the next one's deadline starts with its first byte. */
    void arrived() {
      if (deadline != null) {
        deadline.cancel(false);
        deadline = null;
      }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
      if (evt instanceof IdleStateEvent) {
        ctx.close();
      } else {
        super.userEventTriggered(ctx, evt);
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      arrived();
      super.channelInactive(ctx);
    }
  }

  /** Routes a whole request: method check, then the route on its executor, then the answer. */
  private final class Dispatch extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
      RequestDeadline d = ctx.pipeline().get(RequestDeadline.class);
      if (d != null) {
        d.arrived();
      }
      boolean keepAlive = HttpUtil.isKeepAlive(req);
      if (!req.decoderResult().isSuccess()) {
        write(ctx, Reply.text(400, "bad request\n"), false, false, null);
        return;
      }
      QueryStringDecoder uri = new QueryStringDecoder(req.uri());
      Route route = routes.get(uri.path());
      HttpMethod m = req.method();
      boolean head = HttpMethod.HEAD.equals(m);
      if (route == null) {
        write(ctx, Reply.text(404, "not found\n"), head, keepAlive, null);
        return;
      }
      boolean allowed = route.post() ? HttpMethod.POST.equals(m) : HttpMethod.GET.equals(m) || head;
      if (!allowed) {
        String allow = route.post() ? "POST" : "GET, HEAD";
        write(
            ctx,
            Reply.text(405, "method not allowed (allowed: " + allow + ")\n"),
            head,
            keepAlive,
            allow);
        return;
      }
      if (route.loopbackOnly()
          && !(ctx.channel().remoteAddress() instanceof InetSocketAddress a
              && a.getAddress() != null
              && a.getAddress().isLoopbackAddress())) {
        write(ctx, Reply.text(403, "only from a loopback address\n"), head, keepAlive, null);
        return;
      }
      String raw = uri.rawQuery();
      Request r = new Request(raw, req.content().toString(StandardCharsets.UTF_8));
      ThreadPoolExecutor on = route.probe() ? probes : workers;
      try {
        inFlight.incrementAndGet();
        on.execute(
            () -> {
              CompletionStage<Reply> stage;
              try {
                stage = route.handler().handle(r);
              } catch (AdminText.BadQuery e) {
                stage = done(Reply.text(400, "bad query string: " + e.getMessage() + "\n"));
              } catch (RuntimeException e) {
                stage = done(Reply.text(500, "error: " + e.getClass().getSimpleName() + "\n"));
              }
              var unused =
                  stage
                      .toCompletableFuture()
                      .orTimeout(5, TimeUnit.SECONDS)
                      .handle(
                          (reply, e) ->
                              e == null && reply != null
                                  ? reply
                                  : Reply.text(500, "error: " + cause(e) + "\n"))
                      .thenAccept(
                          reply ->
                              ctx.executor()
                                  .execute(
                                      () -> {
                                        write(ctx, reply, head, keepAlive, null);
                                        inFlight.decrementAndGet();
                                      }));
            });
      } catch (java.util.concurrent.RejectedExecutionException e) {
        inFlight.decrementAndGet();
        write(ctx, Reply.text(503, "admin port busy\n"), head, false, null);
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }

  private static String cause(@Nullable Throwable e) {
    Throwable t = e;
    while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t == null ? "no answer" : t.getClass().getSimpleName();
  }

  private static void write(
      ChannelHandlerContext ctx,
      Reply reply,
      boolean head,
      boolean keepAlive,
      @Nullable String allow) {
    String text = reply.body();
    byte[] body = text == null ? new byte[0] : text.getBytes(StandardCharsets.UTF_8);
    DefaultFullHttpResponse resp =
        new DefaultFullHttpResponse(
            HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(reply.status()),
            head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body));
    resp.headers()
        .set(HttpHeaderNames.CONTENT_TYPE, reply.contentType())
        .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
    if (allow != null) {
      resp.headers().set(HttpHeaderNames.ALLOW, allow);
    }
    if (keepAlive) {
      resp.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
      ctx.writeAndFlush(resp);
    } else {
      resp.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      ctx.writeAndFlush(resp).addListener(ChannelFutureListener.CLOSE);
    }
  }

  private final java.util.concurrent.atomic.AtomicBoolean started =
      new java.util.concurrent.atomic.AtomicBoolean();

  public void start() {
    if (started.compareAndSet(false, true)) {
      channel.config().setAutoRead(true);
      channel.read();
    }
    AdminHttpServer c = control;
    if (c != null) {
      c.start();
    }
  }

  /** Requests handed to a route and not answered yet (tests: every answer is written). */
  int inFlight() {
    return inFlight.get();
  }

  public int port() {
    return address().getPort();
  }

  /** The bound address (host and port). */
  public InetSocketAddress address() {
    return (InetSocketAddress) channel.localAddress();
  }

  @Override
  public void close() {
    AdminHttpServer c = control;
    if (c != null) {
      c.close();
    }
    channel.close().syncUninterruptibly();
    accept.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    io.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownNow();
    probes.shutdownNow();
  }
}
