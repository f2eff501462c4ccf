package io.sluice.bench;

import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * HTTP/2 rapid reset against Sluice's gRPC port, measured from a well-behaved client's side: a
 * closed loop of one-shot ext_proc streams (request headers with end_of_stream, half-close, the
 * server ends it OK) on one connection, alone and then beside one connection that opens streams and
 * resets them (HEADERS, RST_STREAM CANCEL) as fast as it can until the server closes it, window
 * after window, alternating. A round's ratio is its attacked window's streams/s ÷ its quiet
 * window's; the result is the median over rounds. Everything runs in this process on loopback.
 */
@Command(
    name = "rapid-reset",
    description = "A well-behaved client's rate alone vs beside one rapid-reset connection.")
final class RapidReset implements Callable<Integer> {
  private static final String PROCESS = "/envoy.service.ext_proc.v3.ExternalProcessor/Process";

  @Option(names = "--rounds", description = "quiet + attacked windows (default: ${DEFAULT-VALUE})")
  int rounds = 5;

  @Option(names = "--duration", description = "seconds per window (default: ${DEFAULT-VALUE})")
  int durationSeconds = 5;

  @Option(names = "--warmup", description = "seconds of warm-up (default: ${DEFAULT-VALUE})")
  int warmupSeconds = 10;

  @Option(
      names = "--workers",
      description = "the well-behaved client's streams in flight (default: ${DEFAULT-VALUE})")
  int workers = 4;

  @Option(
      names = "--max-resets",
      description =
          "server.grpc.maxResetsPerWindow; default: the server's own default (40000 per 1s);"
              + " 0 turns the limit off")
  @Nullable Integer maxResets;

  @Option(
      names = "--max-premature-resets",
      description =
          "server.grpc.maxPrematureResets (the guard before grpc's codec); default: the server's"
              + " own default (1000, ratio 0.5); 0 turns the guard off")
  @Nullable Integer maxPremature;

  @Option(
      names = "--reconnect",
      description =
          "the abuser reconnects after each close, for the whole window (default: one"
              + " connection)")
  boolean reconnect;

  @Override
  public Integer call() throws Exception {
    String grpcExtra =
        (maxResets == null ? "" : ", maxResetsPerWindow: " + maxResets)
            + (maxPremature == null ? "" : ", maxPrematureResets: " + maxPremature);
    String yaml =
        """
        server:
          grpc: {host: 127.0.0.1, port: 0 %s}
          admin: {host: 127.0.0.1, port: 0}
          warmup: {enabled: false}
        pools: {gpu: {capacity: 100000000}}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
        signals: {tenant: [{metadata: x-sluice-tenant}]}
        decisionLog: {enabled: false}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        """
            .formatted(grpcExtra);
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(yaml))) {
      int port = server.grpcPort();
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
      ExecutorService pool = Executors.newFixedThreadPool(workers + 1);
      try {
        System.out.printf(
            Locale.ROOT,
            "rapid-reset: %d rounds of %d s quiet + %d s attacked, %d well-behaved streams in"
                + " flight, maxResetsPerWindow %s, maxPrematureResets %s, warm-up %d s, abuser %s%n",
            rounds,
            durationSeconds,
            durationSeconds,
            workers,
            maxResets == null ? "default (40000/1s)" : maxResets,
            maxPremature == null ? "default (1000, ratio 0.5)" : maxPremature,
            warmupSeconds,
            reconnect ? "reconnects" : "one connection");
        legit(ch, pool, warmupSeconds * 1000L);
        double[] ratios = new double[rounds];
        for (int r = 0; r < rounds; r++) {
          long window = durationSeconds * 1000L;
          double alone = legit(ch, pool, window) / (window / 1000.0);
          Abuse abuse = new Abuse(port, window, reconnect);
          Future<?> a = pool.submit(abuse);
          double beside = legit(ch, pool, window) / (window / 1000.0);
          a.get(window + 30_000, TimeUnit.MILLISECONDS);
          ratios[r] = beside / alone;
          System.out.printf(
              Locale.ROOT,
              "round %d: alone %.0f streams/s, beside the abuser %.0f streams/s, ratio %.2f;"
                  + " abuser: %d resets on %d connection(s), first closed after %d ms (GOAWAY"
                  + " %s); refusals so far: premature_resets %.0f, too_many_resets %.0f%n",
              r + 1,
              alone,
              beside,
              ratios[r],
              abuse.resets.get(),
              abuse.connections.get(),
              abuse.firstCloseMillis.get(),
              abuse.goAway.get() < 0 ? "none" : "0x" + Long.toHexString(abuse.goAway.get()),
              refusals(server, "premature_resets"),
              refusals(server, "too_many_resets"));
        }
        double[] sorted = ratios.clone();
        Arrays.sort(sorted);
        System.out.printf(
            Locale.ROOT,
            "median ratio (beside / alone) over %d rounds: %.2f (min %.2f, max %.2f)%n",
            rounds,
            sorted[rounds / 2],
            sorted[0],
            sorted[rounds - 1]);
      } finally {
        pool.shutdownNow();
        ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
    return 0;
  }

  private static double refusals(SluiceServer server, String reason) {
    var c =
        server.registry().find("sluice.grpc.transport.refusals").tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  /** Well-behaved streams completed by {@link #workers} closed loops on {@code ch} in millis. */
  private long legit(ManagedChannel ch, ExecutorService pool, long millis) throws Exception {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    List<Future<Long>> done = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      done.add(
          pool.submit(
              () -> {
                long n = 0;
                while (System.nanoTime() - end < 0) {
                  if (oneStream(ch)) {
                    n++;
                  }
                }
                return n;
              }));
    }
    long total = 0;
    for (Future<Long> f : done) {
      total += f.get(millis + 30_000, TimeUnit.MILLISECONDS);
    }
    return total;
  }

  private static final ProcessingRequest HEADERS_ONLY = headersOnly();

  private static ProcessingRequest headersOnly() {
    HeaderMap.Builder hm = HeaderMap.newBuilder();
    String[][] h = {
      {":method", "POST"},
      {":path", "/v1/chat/completions"},
      {":authority", "llm.example.com"},
      {"content-type", "application/json"}
    };
    for (String[] kv : h) {
      hm.addHeaders(
          HeaderValue.newBuilder()
              .setKey(kv[0])
              .setRawValue(com.google.protobuf.ByteString.copyFromUtf8(kv[1])));
    }
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(hm).setEndOfStream(true))
        .build();
  }

  /** One stream: headers with end_of_stream, half-close; true when the server ended it OK. */
  private static boolean oneStream(ManagedChannel ch) throws Exception {
    CompletableFuture<Boolean> ok = new CompletableFuture<>();
    ClientResponseObserver<ProcessingRequest, ProcessingResponse> obs =
        new ClientResponseObserver<>() {
          @Override
          public void beforeStart(ClientCallStreamObserver<ProcessingRequest> requests) {}

          @Override
          public void onNext(ProcessingResponse value) {}

          @Override
          public void onError(Throwable t) {
            ok.complete(false);
          }

          @Override
          public void onCompleted() {
            ok.complete(true);
          }
        };
    var requests = ExternalProcessorGrpc.newStub(ch).process(obs);
    requests.onNext(HEADERS_ONLY);
    requests.onCompleted();
    return ok.get(10, TimeUnit.SECONDS);
  }

  /** One connection (or one after another) of HEADERS + RST_STREAM at full speed, bounded. */
  private static final class Abuse implements Runnable {
    final int port;
    final long millis;
    final boolean reconnect;
    final AtomicLong resets = new AtomicLong();
    final AtomicLong connections = new AtomicLong();
    final AtomicLong firstCloseMillis = new AtomicLong(-1);
    final AtomicLong goAway = new AtomicLong(-1);

    Abuse(int port, long millis, boolean reconnect) {
      this.port = port;
      this.millis = millis;
      this.reconnect = reconnect;
    }

    @Override
    public void run() {
      long t0 = System.nanoTime();
      long end = t0 + TimeUnit.MILLISECONDS.toNanos(millis);
      do {
        try (RawH2 c = new RawH2(port)) {
          connections.incrementAndGet();
          byte[] block = RawH2.hpack(PROCESS);
          int n = 0;
          while (System.nanoTime() - end < 0 && !c.closed) {
            int id = c.headers(block);
            c.reset(id);
            resets.incrementAndGet();
            if (++n % 50 == 0) {
              c.flush();
            }
          }
        } catch (IOException e) {
          // the server closed the connection: the point
        }
        firstCloseMillis.compareAndSet(-1, (System.nanoTime() - t0) / 1_000_000);
      } while (reconnect && System.nanoTime() - end < 0 && !Thread.currentThread().isInterrupted());
    }

    /** A bare h2c client: preface, SETTINGS, then frames as told; a reader acks and watches. */
    final class RawH2 implements AutoCloseable {
      final Socket socket = new Socket();
      final OutputStream out;
      volatile boolean closed;
      int next = 1;

      RawH2(int port) throws IOException {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setTcpNoDelay(true);
        out = new BufferedOutputStream(socket.getOutputStream(), 64 << 10);
        synchronized (this) {
          out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
          frame(4, 0, 0, new byte[0]);
          out.flush();
        }
        Thread t = new Thread(this::read, "rapid-reset-reader");
        t.setDaemon(true);
        t.start();
      }

      static byte[] hpack(String path) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        String[][] h = {
          {":method", "POST"},
          {":scheme", "http"},
          {":path", path},
          {":authority", "127.0.0.1"},
          {"content-type", "application/grpc"},
          {"te", "trailers"}
        };
        for (String[] kv : h) {
          b.write(0); // literal without indexing, new name; no Huffman
          for (String s : kv) {
            byte[] v = s.getBytes(StandardCharsets.US_ASCII);
            b.write(v.length);
            b.write(v, 0, v.length);
          }
        }
        return b.toByteArray();
      }

      synchronized int headers(byte[] block) throws IOException {
        int id = next;
        next += 2;
        frame(1, 0x4, id, block);
        return id;
      }

      synchronized void reset(int id) throws IOException {
        frame(3, 0, id, new byte[] {0, 0, 0, 8});
      }

      synchronized void flush() throws IOException {
        out.flush();
      }

      private void frame(int type, int flags, int stream, byte[] payload) throws IOException {
        int n = payload.length;
        out.write(
            new byte[] {
              (byte) (n >>> 16),
              (byte) (n >>> 8),
              (byte) n,
              (byte) type,
              (byte) flags,
              (byte) (stream >>> 24),
              (byte) (stream >>> 16),
              (byte) (stream >>> 8),
              (byte) stream
            });
        out.write(payload);
      }

      private void read() {
        try (DataInputStream in = new DataInputStream(socket.getInputStream())) {
          while (true) {
            int len = (in.readUnsignedByte() << 16) | in.readUnsignedShort();
            int type = in.readUnsignedByte();
            int flags = in.readUnsignedByte();
            in.readInt();
            byte[] payload = new byte[len];
            in.readFully(payload);
            if ((type == 4 || type == 6) && (flags & 1) == 0) {
              synchronized (this) {
                frame(type, 1, 0, type == 6 ? payload : new byte[0]);
                out.flush();
              }
            } else if (type == 7 && len >= 8) {
              goAway.set(
                  ((payload[4] & 0xffL) << 24)
                      | ((payload[5] & 0xff) << 16)
                      | ((payload[6] & 0xff) << 8)
                      | (payload[7] & 0xff));
            }
          }
        } catch (IOException e) {
          // closed by the server (or by us)
        } finally {
          closed = true;
        }
      }

      @Override
      public void close() throws IOException {
        socket.close();
      }
    }
  }
}
