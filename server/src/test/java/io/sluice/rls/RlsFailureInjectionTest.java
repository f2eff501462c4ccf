package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.core.time.FakeTicker;
import io.sluice.rls.config.RateLimitConfig;
import io.sluice.rls.config.RateLimitConfigLoader;
import io.sluice.rls.config.RateLimitConfigLoader.ConfigFile;
import io.sluice.rls.config.RlsSettings;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryStore;
import io.sluice.testing.RawBytes;
import java.net.InetSocketAddress;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every exit of ShouldRateLimit, with a failure injected at each step (request bytes, weight,
 * config, store call, store future, late completion): each call gets exactly one gRPC answer — a
 * decision, the failure mode's decision, or a status — within its deadline, is counted once in
 * {@code sluice.rls.calls}, and nothing reaches gRPC's "Application error" path (no SEVERE log, no
 * uncaught exception).
 */
class RlsFailureInjectionTest {
  /** Where the failure is injected. */
  private final java.util.concurrent.CountDownLatch storeAsked =
      new java.util.concurrent.CountDownLatch(1);

  enum Fault {
    NONE,
    STORE_THROWS, // increment() throws instead of returning a stage
    STORE_FAILS, // the stage completes exceptionally (at once)
    STORE_FAILS_LATER, // ... on another thread, later
    STORE_NEVER_ANSWERS, // the stage never completes
    BUCKET_THROWS, // take() throws
    CONFIG_THROWS, // the config supplier throws
    STORE_RETURNS_NULL // a broken store returns null instead of a stage
  }

  static final Instant START = Instant.ofEpochSecond(1_700_000_000L);
  final MutableClock clock = new MutableClock(START);
  final InMemoryStore memory = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final List<LogRecord> severe = new CopyOnWriteArrayList<>();
  final List<Throwable> uncaught = new CopyOnWriteArrayList<>();
  volatile Fault fault = Fault.NONE;
  Server server;
  ManagedChannel channel;
  Thread.UncaughtExceptionHandler previousHandler;
  final Handler capture =
      new Handler() {
        @Override
        public void publish(LogRecord r) {
          if (r.getLevel().intValue() >= Level.SEVERE.intValue()) {
            severe.add(r);
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  @BeforeEach
  void start() throws Exception {
    Logger.getLogger("").addHandler(capture);
    Logger.getLogger("io.grpc").addHandler(capture);
    previousHandler = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    RlsSettings settings =
        RlsSettings.fromEnv(
            Map.of(
                "EXPIRATION_JITTER_MAX_SECONDS", "0",
                "SLUICE_RLS_FAILURE_MODE", "closed"));
    RateLimitConfig config =
        RateLimitConfigLoader.build(
            List.of(
                new ConfigFile(
                    "config.yaml",
                    """
                    domain: d
                    descriptors:
                      - key: user
                        rate_limit: {unit: minute, requests_per_unit: 5}
                      - key: tb
                        rate_limit: {unit: minute, requests_per_unit: 5, algorithm: token_bucket}
                    """)),
            false);
    Supplier<RateLimitConfig> cfg =
        () -> {
          if (fault == Fault.CONFIG_THROWS) {
            throw new IllegalStateException("injected: config");
          }
          return config;
        };
    CounterStore counters =
        new CounterStore() {
          @Override
          public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
            return switch (fault) {
              case STORE_THROWS -> throw new IllegalStateException("injected: increment");
              case STORE_FAILS -> CompletableFuture.failedFuture(new StoreException("injected"));
              case STORE_FAILS_LATER -> later(new StoreException("injected later"));
              case STORE_NEVER_ANSWERS -> {
                storeAsked.countDown();
                yield new CompletableFuture<>();
              }
              case STORE_RETURNS_NULL -> null;
              default -> memory.increment(batch);
            };
          }

          @Override
          public StoreHealth health() {
            return StoreHealth.ALWAYS_HEALTHY;
          }
        };
    TokenBucketStore buckets =
        new TokenBucketStore() {
          @Override
          public CompletionStage<TokenBucketResult> take(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            if (fault == Fault.BUCKET_THROWS) {
              throw new IllegalStateException("injected: take");
            }
            if (fault == Fault.STORE_NEVER_ANSWERS) {
              return new CompletableFuture<>();
            }
            return memory.take(key, spec, tokens, nowMillis);
          }

          @Override
          public CompletionStage<TokenBucketResult> charge(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            return memory.charge(key, spec, tokens, nowMillis);
          }

          @Override
          public StoreHealth health() {
            return StoreHealth.ALWAYS_HEALTHY;
          }
        };
    RateLimitEvaluator evaluator =
        new RateLimitEvaluator(
            settings,
            cfg,
            counters,
            buckets,
            new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
            java.time.Duration.ofMillis(50), // REDIS_COMMAND_TIMEOUT's default
            clock,
            new FakeTicker(),
            new RlsMetrics(registry));
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(new RateLimitServiceAdapter(evaluator))
            .build()
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    Logger.getLogger("").removeHandler(capture);
    Logger.getLogger("io.grpc").removeHandler(capture);
    Thread.setDefaultUncaughtExceptionHandler(previousHandler);
  }

  private static <T> CompletionStage<T> later(Throwable e) {
    CompletableFuture<T> f = new CompletableFuture<>();
    CompletableFuture.delayedExecutor(5, TimeUnit.MILLISECONDS)
        .execute(() -> f.completeExceptionally(e));
    return f;
  }

  private double calls() {
    return registry.find("sluice.rls.calls").counters().stream().mapToDouble(Counter::count).sum();
  }

  private double calls(String result) {
    Counter c = registry.find("sluice.rls.calls").tag("result", result).counter();
    return c == null ? 0 : c.count();
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  private static RateLimitRequest request(RateLimitDescriptor... ds) {
    RateLimitRequest.Builder b = RateLimitRequest.newBuilder().setDomain("d");
    for (RateLimitDescriptor d : ds) {
      b.addDescriptors(d);
    }
    return b.build();
  }

  /** The answer as a status: OK with the response's overall code, or the error status. */
  private record Answer(Status.Code code, RateLimitResponse response) {}

  private Answer call(RateLimitRequest req) {
    try {
      RateLimitResponse r =
          RateLimitServiceGrpc.newBlockingStub(channel)
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .shouldRateLimit(req);
      return new Answer(Status.Code.OK, r);
    } catch (StatusRuntimeException e) {
      return new Answer(e.getStatus().getCode(), null);
    }
  }

  private void assertNothingEscaped() {
    assertThat(severe).extracting(LogRecord::getMessage).isEmpty();
    assertThat(uncaught).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(Fault.class)
  void everyInjectedFailure_getsOneAnswer_isCountedOnce_andNothingEscapes(Fault f) {
    fault = f;
    List<Answer> answers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      double before = calls();
      answers.add(call(request(descriptor("user", "u" + i), descriptor("tb", "t" + i))));
      assertThat(calls()).as("counted once").isEqualTo(before + 1);
    }
    for (Answer a : answers) {
      assertThat(a.code())
          .as(f + ": answered before the client's deadline")
          .isNotEqualTo(Status.Code.DEADLINE_EXCEEDED);
      switch (f) {
        case NONE -> {
          assertThat(a.code()).isEqualTo(Status.Code.OK);
          assertThat(a.response().getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
        }
        case STORE_FAILS, STORE_FAILS_LATER, STORE_NEVER_ANSWERS -> {
          // a store failure: the configured failure mode (closed) decides
          assertThat(a.code()).isEqualTo(Status.Code.OK);
          assertThat(a.response().getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
        }
        default -> assertThat(a.code()).isEqualTo(Status.Code.UNKNOWN); // internal error
      }
    }
    if (f == Fault.STORE_THROWS
        || f == Fault.BUCKET_THROWS
        || f == Fault.CONFIG_THROWS
        || f == Fault.STORE_RETURNS_NULL) {
      assertThat(calls("internal_error")).isEqualTo(3);
    }
    assertNothingEscaped();
  }

  /**
   * The call Envoy's rate limit filter makes at the stream's end ({@code apply_on_stream_done},
   * {@code hits_addend} from the response's usage): under every store failure it gets one OK answer
   * (the failure mode's code) within the client's deadline, never a failed call, which is what a
   * response-phase call's failure turned into a use-after-free in Envoy before the fix for
   * CVE-2026-26330 (docs/envoy.md, "Failure semantics"). Only Sluice's own internal faults still
   * answer a status.
   */
  @ParameterizedTest
  @EnumSource(Fault.class)
  void streamDoneCharge_underEveryStoreFailure_oneOkAnswer_neverAFailedCall(Fault f) {
    fault = f;
    double before = calls();
    RateLimitRequest atStreamDone =
        request(descriptor("user", "done"), descriptor("tb", "done")).toBuilder()
            .setHitsAddend(4321)
            .build();
    Answer a = call(atStreamDone);
    assertThat(calls()).as("counted once").isEqualTo(before + 1);
    switch (f) {
      case NONE, STORE_FAILS, STORE_FAILS_LATER, STORE_NEVER_ANSWERS -> {
        assertThat(a.code()).as(f + ": an answer, not a failed call").isEqualTo(Status.Code.OK);
        // 4321 hits against a limit of 5: over it whether the store or the failure mode decided
        assertThat(a.response().getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
      }
      default -> assertThat(a.code()).isEqualTo(Status.Code.UNKNOWN);
    }
    assertNothingEscaped();
  }

  @Test
  void hitsAddendOf2Pow64Minus1_isInvalidArgument_counted_andCountsNothing() {
    RateLimitDescriptor huge =
        descriptor("user", "alice").toBuilder().setHitsAddend(UInt64Value.of(-1L)).build();
    Answer a = call(request(huge));
    assertThat(a.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(calls("invalid_argument")).isEqualTo(1);
    assertThat(calls()).isEqualTo(1);
    Counter reason =
        registry
            .find("sluice.rls.invalid_requests")
            .tag("reason", "hits_addend_out_of_range")
            .counter();
    assertThat(reason).isNotNull();
    assertThat(reason.count()).isEqualTo(1);
    // nothing was counted: alice still has her whole budget
    assertThat(
            call(request(descriptor("user", "alice")))
                .response()
                .getStatuses(0)
                .getLimitRemaining())
        .isEqualTo(4);
    assertNothingEscaped();
  }

  @Test
  void hitsAddendOf2Pow63_isInvalidArgument() {
    RateLimitDescriptor huge =
        descriptor("user", "bob").toBuilder().setHitsAddend(UInt64Value.of(Long.MIN_VALUE)).build();
    assertThat(call(request(huge)).code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertNothingEscaped();
  }

  /** The largest accepted weight, twice: the counter saturates, it never wraps below the limit. */
  @Test
  void hitsAddendOf2Pow63Minus1_twice_staysOverLimit_neverWraps() {
    RateLimitDescriptor max =
        descriptor("user", "carol").toBuilder()
            .setHitsAddend(UInt64Value.of(Long.MAX_VALUE))
            .build();
    assertThat(call(request(max)).response().getOverallCode())
        .isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(call(request(max)).response().getOverallCode())
        .isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(call(request(descriptor("user", "carol"))).response().getOverallCode())
        .isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    RateLimitDescriptor tb =
        descriptor("tb", "carol").toBuilder().setHitsAddend(UInt64Value.of(Long.MAX_VALUE)).build();
    assertThat(call(request(tb)).response().getOverallCode())
        .isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertNothingEscaped();
  }

  private static final MethodDescriptor.Marshaller<byte[]> BYTES = RawBytes.MARSHALLER;

  /** Truncated, garbage and wrong-wire-type frames: INVALID_ARGUMENT, counted, no SEVERE log. */
  @Test
  void malformedFrames_areInvalidArgument_countedByReason_withoutSevereLogs() {
    MethodDescriptor<byte[], byte[]> raw =
        RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(BYTES, BYTES).build();
    byte[] valid = request(descriptor("user", "dave")).toByteArray();
    List<byte[]> frames =
        List.of(
            java.util.Arrays.copyOf(valid, valid.length - 3), // truncated
            new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff}, // garbage tag
            new byte[] {0x0a, 0x7f, 0x61}, // length past the end
            new byte[] {0x12, 0x06, 0x0a, 0x04, 0x0a, 0x02, (byte) 0xc3, 0x28}); // bad UTF-8 key
    for (byte[] frame : frames) {
      try {
        ClientCalls.blockingUnaryCall(
            channel, raw, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), frame);
        org.junit.jupiter.api.Assertions.fail("answered OK");
      } catch (StatusRuntimeException e) {
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      }
    }
    assertThat(calls("invalid_argument")).isEqualTo(frames.size());
    Counter malformed =
        registry.find("sluice.rls.invalid_requests").tag("reason", "malformed").counter();
    assertThat(malformed).isNotNull();
    assertThat(malformed.count()).isEqualTo(frames.size());
    assertNothingEscaped();
  }

  /**
   * A client that has gone before the store answers: counted as cancelled, nothing thrown. The
   * client cancels once the store has been asked (not on a timer: under load a short client
   * deadline could expire before the server ever started the call, which then counts nothing).
   */
  @Test
  void clientGoneBeforeTheStoreAnswers_isCountedCancelled_andNothingEscapes() throws Exception {
    fault = Fault.STORE_NEVER_ANSWERS; // the evaluator's store deadline (200 ms) decides
    io.grpc.Context.CancellableContext ctx = io.grpc.Context.current().withCancellation();
    var answer =
        ctx.call(
            () ->
                RateLimitServiceGrpc.newFutureStub(channel)
                    .shouldRateLimit(request(descriptor("user", "erin"))));
    assertThat(storeAsked.await(30, TimeUnit.SECONDS)).as("the store was asked").isTrue();
    ctx.cancel(null); // the client goes away while the store has not answered
    try {
      answer.get(30, TimeUnit.SECONDS);
      org.junit.jupiter.api.Assertions.fail("answered after the cancel");
    } catch (java.util.concurrent.ExecutionException
        | java.util.concurrent.CancellationException e) {
      assertThat(Status.fromThrowable(e).getCode()).isEqualTo(Status.Code.CANCELLED);
    }
    // a liveness bound (the store deadline, 200 ms, decides); generous for a loaded machine
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(30))
        .until(
            () -> {
              Counter c = registry.find("sluice.rls.cancelled").counter();
              return c != null && c.count() == 1;
            });
    assertThat(calls()).isEqualTo(1); // decided by the failure mode, counted once
    assertNothingEscaped();
  }
}
