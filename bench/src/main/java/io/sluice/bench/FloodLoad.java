package io.sluice.bench;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** The flood: {@code rate} operations per second for {@code seconds}, in 10 ms ticks. */
final class FloodLoad {

  enum Kind {
    RLS,
    IDLE,
    MALFORMED
  }

  static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        }
      };

  static final MethodDescriptor<byte[], byte[]> RAW_PROCESS =
      ExternalProcessorGrpc.getProcessMethod().toBuilder(BYTES, BYTES).build();

  final List<ManagedChannel> chans;
  final int rate;
  final int seconds;
  final Kind kind;
  int valueBytes = 8192;
  final LongAdder sent = new LongAdder();
  final LongAdder skipped = new LongAdder();
  final Map<String, LongAdder> closes = new ConcurrentHashMap<>();
  final ConcurrentLinkedQueue<ClientCall<?, ?>> open = new ConcurrentLinkedQueue<>();
  final Semaphore outstanding;
  final AtomicLong seq = new AtomicLong();
  final AtomicLong rotor = new AtomicLong();

  FloodLoad(List<ManagedChannel> chans, int rate, int seconds, Kind kind) {
    this.chans = List.copyOf(chans);
    this.rate = rate;
    this.seconds = seconds;
    this.kind = kind;
    // idle streams stay open for the phase; other calls are capped at 5 s of flood in flight
    this.outstanding = new Semaphore(kind == Kind.IDLE ? rate * seconds + 1 : rate * 5 + 1);
  }

  String describe() {
    return switch (kind) {
      case RLS ->
          String.format(
              Locale.ROOT,
              "%d unique %d-byte descriptor values/s for %d s",
              rate,
              valueBytes,
              seconds);
      case IDLE -> String.format(Locale.ROOT, "%d idle streams/s for %d s", rate, seconds);
      case MALFORMED -> String.format(Locale.ROOT, "%d malformed frames/s for %d s", rate, seconds);
    };
  }

  String outcome() {
    StringBuilder sb = new StringBuilder().append(sent.sum()).append(" sent");
    if (skipped.sum() > 0) {
      sb.append(", ").append(skipped.sum()).append(" not sent (client cap)");
    }
    if (kind == Kind.IDLE) {
      long ended = closes.values().stream().mapToLong(LongAdder::sum).sum();
      sb.append(", ").append(Math.max(0, sent.sum() - ended)).append(" still open at the end");
    }
    closes.entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(e -> sb.append(", ").append(e.getValue().sum()).append(' ').append(e.getKey()));
    return sb.toString();
  }

  void run() throws InterruptedException {
    long start = System.nanoTime();
    long ticks = seconds * 100L;
    for (long t = 0; t < ticks; t++) {
      long due = start + t * 10_000_000L;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        TimeUnit.NANOSECONDS.sleep(wait);
      }
      long target = (t + 1) * rate / 100 - t * rate / 100;
      for (long i = 0; i < target; i++) {
        if (!outstanding.tryAcquire()) {
          skipped.increment();
          continue;
        }
        sent.increment();
        switch (kind) {
          case RLS -> rls();
          case IDLE -> idle();
          case MALFORMED -> malformed();
        }
      }
    }
  }

  /** The flood's connections in turn. */
  private ManagedChannel ch() {
    return chans.get((int) (rotor.getAndIncrement() % chans.size()));
  }

  private void closed(Status s) {
    closes.computeIfAbsent(s.getCode().name(), k -> new LongAdder()).increment();
    if (kind != Kind.IDLE) {
      outstanding.release();
    }
  }

  private void rls() {
    long n = seq.incrementAndGet();
    StringBuilder v = new StringBuilder(valueBytes);
    v.append(n).append('-');
    while (v.length() < valueBytes) {
      v.append("abcdefghijklmnopqrstuvwxyz0123456789");
    }
    v.setLength(valueBytes);
    RateLimitRequest req =
        RateLimitRequest.newBuilder()
            .setDomain("flood")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .addEntries(
                        RateLimitDescriptor.Entry.newBuilder()
                            .setKey("header")
                            .setValue(v.toString())))
            .build();
    ClientCall<RateLimitRequest, RateLimitResponse> call =
        ch().newCall(
                RateLimitServiceGrpc.getShouldRateLimitMethod(),
                CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            closed(status);
          }
        },
        new Metadata());
    call.request(1);
    call.sendMessage(req);
    call.halfClose();
  }

  private void idle() {
    ClientCall<ProcessingRequest, ProcessingResponse> call =
        ch().newCall(ExternalProcessorGrpc.getProcessMethod(), CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            closed(status);
          }
        },
        new Metadata());
    call.request(1);
    open.add(call); // never sends anything
  }

  private void malformed() {
    ClientCall<byte[], byte[]> call =
        ch().newCall(RAW_PROCESS, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            closed(status);
          }
        },
        new Metadata());
    call.request(4);
    call.sendMessage(FloorMessages.request().toByteArray()); // admitted at request headers
    byte[] responseHeaders =
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(
                                HeaderValue.newBuilder()
                                    .setKey(":status")
                                    .setRawValue(ByteString.copyFromUtf8("200")))))
            .build()
            .toByteArray();
    try {
      call.sendMessage(java.util.Arrays.copyOf(responseHeaders, responseHeaders.length - 3));
      call.halfClose();
    } catch (IllegalStateException e) {
      // the call already ended
    }
  }

  void closeAll() {
    for (ClientCall<?, ?> c : open) {
      c.cancel("flood over", null);
    }
  }
}
