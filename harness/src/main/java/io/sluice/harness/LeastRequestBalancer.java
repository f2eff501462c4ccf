package io.sluice.harness;

import com.google.protobuf.Struct;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.HttpHeaders;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;
import java.util.function.IntUnaryOperator;

/**
 * Envoy's {@code LEAST_REQUEST} load balancer over several backends (one emulated Envoy per Sluice
 * replica, in front of one upstream): each request goes to the healthy backend with the fewest open
 * requests among {@code choiceCount} drawn at random (Envoy's default: two, drawn with replacement,
 * the first kept on a tie), or among all healthy backends when {@code choiceCount} is 0 (Envoy's
 * full scan; ties broken at random). A request is open from {@link #sendAsync} until its result
 * completes, as Envoy counts {@code rq_active} of a host. {@link #eject} takes a backend out of the
 * rotation (a failed health check, or Kubernetes removing a terminating pod's endpoint): requests
 * already on it finish there.
 */
public final class LeastRequestBalancer {
  private final List<Function<HttpRequest, CompletableFuture<HttpResult>>> backends;
  private final int choiceCount;
  private final AtomicIntegerArray open;
  private final AtomicIntegerArray healthy;
  private final AtomicLongArray sent;

  /**
   * @param backends where a request can go (at least one)
   * @param choiceCount backends drawn per pick (Envoy's {@code choice_count}, default 2); 0 for a
   *     full scan
   */
  public LeastRequestBalancer(
      List<Function<HttpRequest, CompletableFuture<HttpResult>>> backends, int choiceCount) {
    if (backends.isEmpty()) {
      throw new IllegalArgumentException("backends: empty (expected: at least one)");
    }
    if (choiceCount < 0) {
      throw new IllegalArgumentException("choiceCount: " + choiceCount + " (expected: >= 0)");
    }
    this.backends = List.copyOf(backends);
    this.choiceCount = choiceCount;
    int n = backends.size();
    this.open = new AtomicIntegerArray(n);
    this.healthy = new AtomicIntegerArray(n);
    this.sent = new AtomicLongArray(n);
    for (int i = 0; i < n; i++) {
      healthy.set(i, 1);
    }
  }

  public int size() {
    return backends.size();
  }

  /** Requests open on backend {@code i} now. */
  public int open(int i) {
    return open.get(i);
  }

  /** Requests sent to backend {@code i} so far. */
  public long sent(int i) {
    return sent.get(i);
  }

  public boolean healthy(int i) {
    return healthy.get(i) == 1;
  }

  /** Takes backend {@code i} out of the rotation: no new request goes there. */
  public void eject(int i) {
    healthy.set(i, 0);
  }

  /** Puts backend {@code i} back into the rotation. */
  public void restore(int i) {
    healthy.set(i, 1);
  }

  /**
   * Sends {@code request} to the chosen backend; with no healthy backend, Envoy's local reply 503
   * {@code no_healthy_upstream}. The future never completes exceptionally if the backends' never
   * do.
   */
  public CompletableFuture<HttpResult> sendAsync(HttpRequest request) {
    int n = backends.size();
    int[] openNow = new int[n];
    boolean[] up = new boolean[n];
    for (int i = 0; i < n; i++) {
      openNow[i] = open.get(i);
      up[i] = healthy.get(i) == 1;
    }
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    int i = pick(openNow, up, choiceCount, rnd::nextInt);
    if (i < 0) {
      return CompletableFuture.completedFuture(noHealthyUpstream());
    }
    open.incrementAndGet(i);
    sent.incrementAndGet(i);
    CompletableFuture<HttpResult> f;
    try {
      f = backends.get(i).apply(request);
    } catch (RuntimeException e) {
      open.decrementAndGet(i);
      throw e;
    }
    return f.whenComplete((r, e) -> open.decrementAndGet(i));
  }

  /**
   * The backend a request goes to: among the healthy ones ({@code up}), the one with the fewest
   * {@code open} requests of {@code choiceCount} drawn with replacement by {@code random} (given a
   * bound n, it answers in [0, n)), the first drawn kept on a tie; with {@code choiceCount} 0, the
   * fewest of all, ties broken by {@code random}. -1 when none is healthy.
   */
  static int pick(int[] open, boolean[] up, int choiceCount, IntUnaryOperator random) {
    int[] candidates = new int[open.length];
    int m = 0;
    for (int i = 0; i < open.length; i++) {
      if (up[i]) {
        candidates[m++] = i;
      }
    }
    if (m == 0) {
      return -1;
    }
    if (m == 1) {
      return candidates[0];
    }
    if (choiceCount == 0) {
      int least = Integer.MAX_VALUE;
      int ties = 0;
      for (int k = 0; k < m; k++) {
        int o = open[candidates[k]];
        if (o < least) {
          least = o;
          ties = 0;
        }
        if (o == least) {
          candidates[ties++] = candidates[k];
        }
      }
      return candidates[ties == 1 ? 0 : random.applyAsInt(ties)];
    }
    int best = -1;
    for (int c = 0; c < choiceCount; c++) {
      int drawn = candidates[random.applyAsInt(m)];
      if (best < 0 || open[drawn] < open[best]) {
        best = drawn;
      }
    }
    return best;
  }

  private static HttpResult noHealthyUpstream() {
    return HttpResult.beforeRouter(
        HttpResult.Outcome.LOCAL_REPLY,
        503,
        HttpHeaders.of("content-type", "text/plain"),
        List.of("no healthy upstream".getBytes(java.nio.charset.StandardCharsets.UTF_8)),
        "no_healthy_upstream",
        Struct.getDefaultInstance(),
        false,
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Duration.ZERO);
  }
}
